// Package jitdump reads the jitdump files that JIT compilers write for perf (jit-PID.dump): the code each loaded, where, when, and its name.
package jitdump

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The file's layout (Linux's tools/perf/Documentation/jitdump-specification.txt): a header, then
// records, each a header of its kind, total size and timestamp, little-endian on x86-64.
const (
	magic      = 0x4A695444 // "JiTD"
	headerSize = 40
	recHeader  = 16

	recCodeLoad  = 0
	recCodeMove  = 1
	recDebugInfo = 2
	recCodeClose = 3

	flagArchTimestamp = 1 // timestamps are the CPU's TSC, not CLOCK_MONOTONIC

	maxCode = 64 << 20 // a function's code: more is damage
)

// Func is a function a JIT loaded: its code [Addr, Addr+Size) from Load to Unload (CLOCK_MONOTONIC
// ns; Unload 0 while it lasts: a move of its code to another address ends it there), its name and
// its instructions.
type Func struct {
	Name         string
	Addr, Size   uint64
	Load, Unload uint64
	Code         []byte
}

// Read reads the jitdump file of size bytes in r: its functions in the order they were loaded.
// A file cut short (its JIT still writing, or killed) yields the functions before the cut; what
// does not parse is an error that says where. The timestamps must be CLOCK_MONOTONIC's.
func Read(r io.ReaderAt, size int64) ([]Func, error) {
	h := make([]byte, headerSize)
	if _, err := r.ReadAt(h, 0); err != nil {
		return nil, fmt.Errorf("its header: %v", err)
	}
	if binary.LittleEndian.Uint32(h) != magic {
		return nil, fmt.Errorf("no jitdump magic at offset 0 (%#x)", binary.LittleEndian.Uint32(h))
	}
	if v := binary.LittleEndian.Uint32(h[4:]); v != 1 {
		return nil, fmt.Errorf("jitdump version %d; this reader reads version 1", v)
	}
	off := int64(binary.LittleEndian.Uint32(h[8:]))
	if off < headerSize || off > size {
		return nil, fmt.Errorf("a header of %d bytes", off)
	}
	if binary.LittleEndian.Uint64(h[32:])&flagArchTimestamp != 0 {
		return nil, errors.New("its timestamps are the CPU's time-stamp counter, not CLOCK_MONOTONIC (the JIT was told to use -k mono's other clock): not read")
	}
	var out []Func
	live := map[uint64]int{} // by code address: the function there now
	rh := make([]byte, recHeader)
	for off+recHeader <= size {
		if _, err := r.ReadAt(rh, off); err != nil {
			return out, fmt.Errorf("offset %d: %v", off, err)
		}
		id, total, ts := binary.LittleEndian.Uint32(rh), int64(binary.LittleEndian.Uint32(rh[4:])), binary.LittleEndian.Uint64(rh[8:])
		if total < recHeader {
			return out, fmt.Errorf("offset %d: a record of %d bytes", off, total)
		}
		if off+total > size {
			break // the last record, cut short
		}
		switch id {
		case recCodeLoad, recCodeMove:
			body := make([]byte, total-recHeader)
			if _, err := r.ReadAt(body, off+recHeader); err != nil {
				return out, fmt.Errorf("offset %d: %v", off, err)
			}
			if len(body) < 40 {
				return out, fmt.Errorf("offset %d: a code record of %d bytes", off, total)
			}
			le := binary.LittleEndian
			if id == recCodeMove {
				oldAddr, newAddr, n := le.Uint64(body[16:]), le.Uint64(body[24:]), le.Uint64(body[32:])
				i, ok := live[oldAddr]
				if !ok || n == 0 || n > maxCode {
					break // a move of code it did not load: nothing to name
				}
				f := out[i]
				out[i].Unload = max(ts, f.Load)
				delete(live, oldAddr)
				f.Addr, f.Load, f.Unload = newAddr, max(ts, f.Load), 0 // the same code, of its size
				retire(out, live, newAddr, ts)
				live[newAddr] = len(out)
				out = append(out, f)
				break
			}
			addr, n := le.Uint64(body[16:]), le.Uint64(body[24:])
			rest := body[40:]
			nul := strings.IndexByte(string(rest), 0)
			if nul < 0 || n == 0 || n > maxCode || uint64(len(rest)-nul-1) < n || addr+n < addr {
				return out, fmt.Errorf("offset %d: a code load of %d bytes at %#x whose name or code does not fit its record of %d bytes", off, n, addr, total)
			}
			retire(out, live, addr, ts)
			live[addr] = len(out)
			out = append(out, Func{Name: string(rest[:nul]), Addr: addr, Size: n, Load: ts, Code: append([]byte(nil), rest[nul+1:nul+1+int(n)]...)})
		case recCodeClose:
			return out, nil
		case recDebugInfo:
		default: // unwinding information and kinds of later versions: stepped over
		}
		off += total
	}
	return out, nil
}

// retire ends the function at addr, where new code is loaded there at ts.
func retire(out []Func, live map[uint64]int, addr, ts uint64) {
	if i, ok := live[addr]; ok {
		out[i].Unload = max(ts, out[i].Load)
		delete(live, addr)
	}
}
