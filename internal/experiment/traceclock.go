package experiment

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"er/internal/regfile"
)

// TraceClockNS returns the CPU time that the clock samples of the trace file file (a clocktrace)
// stand for, in ns; 0 when there is no such file. It reads the file a block at a time.
func TraceClockNS(file string) (int64, error) {
	f, _, err := regfile.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	head := make([]byte, traceHeaderLen)
	if _, err := io.ReadFull(f, head); err != nil {
		return 0, fmt.Errorf("%s: reading the header: %v", file, err)
	}
	if string(head[:8]) != traceMagic || le.Uint32(head[12:]) != traceFileKinds[ClockTraceFile] {
		return 0, fmt.Errorf("%s: not a clock trace file", file)
	}
	blockSize, interval := int64(le.Uint32(head[16:])), int64(le.Uint64(head[24:]))
	if blockSize < 4096 || blockSize%8 != 0 || blockSize > 1<<26 {
		return 0, fmt.Errorf("%s: block size %d", file, blockSize)
	}
	block := make([]byte, blockSize)
	var ns int64
	for off := int64(traceHeaderSize); ; off += blockSize {
		n, err := f.ReadAt(block, off)
		if n < 16 {
			if err == io.EOF || err == nil {
				return ns, nil
			}
			return ns, err
		}
		for p := 0; p+16 <= n; {
			w := le.Uint64(block[p:])
			size := int(w&0xffff) * 8
			if w == 0 || size < 16 || p+size > n {
				break
			}
			if uint8(w>>16) == recClock && size >= 32 {
				ns += int64(le.Uint32(block[p+20:])) * interval
			}
			p += size
		}
	}
}
