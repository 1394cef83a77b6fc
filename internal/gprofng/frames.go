package gprofng

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Kinds of the parts of a frame packet, and the flag of a part (or a uid packet) whose last 8
// bytes are the uid of the stack that continues it.
const (
	infoStack  = 1 // a native call stack
	infoJava   = 2 // a Java call stack
	infoOMP    = 3 // an OpenMP thread state
	infoMPI    = 4 // an MPI thread state
	infoOMP2   = 5 // an OpenMP user call stack
	compressed = 0x80000000
)

// Values of a stack that are not addresses.
const (
	markLeafCheck = ^uint64(0)     // -1: no address (a leaf routine's saved register)
	markTruncated = ^uint64(0) - 1 // -2: the stack was cut at the collector's depth limit
	markFailed    = ^uint64(0) - 2 // -3: the unwind failed here
)

// maxFrames bounds a resolved stack: a chain of links longer than this is damage (or a cycle).
const maxFrames = 1 << 16

// Stacks is the stack table of data.frameinfo: each frame-info uid (a data packet's FRINFO)
// names a native stack uid; a stack uid names some frames, leaf first, and the uid of the stack
// that goes on after them (its callers), so that stacks share their common outer parts.
type Stacks struct {
	frames map[uint64]uint64 // frame-info uid -> native stack uid (0: none)
	nodes  map[uint64]node   // stack uid -> its frames and link
	// Java: a frame packet holds a Java stack; OpenMP: one holds an OpenMP state or stack.
	Java, OpenMP bool
}

type node struct {
	pcs  []uint64
	link uint64
}

// ReadStacks reads data.frameinfo (file names it in errors; wordSize is the target's, 32 or 64).
func ReadStacks(file string, r io.Reader, size int64, wordSize int) (*Stacks, string, error) {
	s := &Stacks{frames: map[uint64]uint64{}, nodes: map[uint64]node{}}
	w := 8
	if wordSize == 32 {
		w = 4
	}
	warn, err := ReadPackets(file, r, size, func(off int64, typ int, p []byte) error {
		switch typ {
		case pcktFrame:
			return s.frame(file, off, p, w)
		case pcktUID:
			if len(p) < 16 {
				return &FormatError{file, off, fmt.Sprintf("uid packet of %d bytes, less than its 16-byte header", len(p))}
			}
			flags := binary.LittleEndian.Uint32(p[4:])
			uid := binary.LittleEndian.Uint64(p[8:])
			return s.add(file, off, uid, p[16:], flags&compressed != 0, w)
		}
		return nil // another kind of packet: not a stack
	})
	return s, warn, err
}

// frame reads a frame packet: its header (size, type, header size, uid), then its parts.
func (s *Stacks) frame(file string, off int64, p []byte, w int) error {
	if len(p) < 16 {
		return &FormatError{file, off, fmt.Sprintf("frame packet of %d bytes, less than its 16-byte header", len(p))}
	}
	hsize := int(binary.LittleEndian.Uint32(p[4:]))
	fuid := binary.LittleEndian.Uint64(p[8:])
	if hsize < 16 || hsize > len(p) || hsize%4 != 0 {
		return &FormatError{file, off, fmt.Sprintf("frame packet's header size %d is outside its %d bytes", hsize, len(p))}
	}
	if _, dup := s.frames[fuid]; !dup {
		s.frames[fuid] = 0
	}
	for i := hsize; i < len(p); {
		if len(p)-i < 8 {
			return &FormatError{file, off + int64(i), fmt.Sprintf("frame packet part of %d bytes, less than its 8-byte header", len(p)-i)}
		}
		n := int(binary.LittleEndian.Uint32(p[i:]))
		kind := binary.LittleEndian.Uint32(p[i+4:])
		if n < 8 || n > len(p)-i || n%4 != 0 {
			return &FormatError{file, off + int64(i), fmt.Sprintf("frame packet part of size %d: not within the packet's %d bytes", n, len(p)-i)}
		}
		part := p[i : i+n]
		switch kind &^ compressed {
		case infoStack:
			if n < 16 {
				return &FormatError{file, off + int64(i), fmt.Sprintf("stack part of %d bytes, less than its 16-byte header", n)}
			}
			uid := binary.LittleEndian.Uint64(part[8:])
			if n > 16 {
				if err := s.add(file, off+int64(i), uid, part[16:], kind&compressed != 0, w); err != nil {
					return err
				}
			}
			if s.frames[fuid] == 0 {
				s.frames[fuid] = uid
			}
		case infoJava:
			s.Java = true
		case infoOMP, infoOMP2:
			s.OpenMP = true
		}
		i += n
	}
	return nil
}

// add records the stack uid: its frames in b (words of w bytes), then, when linked, the uid of
// the stack that goes on in its last 8 bytes.
func (s *Stacks) add(file string, off int64, uid uint64, b []byte, linked bool, w int) error {
	var link uint64
	if linked {
		if len(b) < 8 {
			return &FormatError{file, off, "a linked stack without room for its link"}
		}
		link = binary.LittleEndian.Uint64(b[len(b)-8:])
		b = b[:len(b)-8]
	}
	if len(b)%w != 0 {
		return &FormatError{file, off, fmt.Sprintf("stack of %d bytes: not whole %d-byte addresses", len(b), w)}
	}
	if uid == 0 {
		return nil
	}
	if _, dup := s.nodes[uid]; dup {
		return nil // the first definition holds
	}
	pcs := make([]uint64, len(b)/w)
	for i := range pcs {
		if w == 4 {
			v := uint64(binary.LittleEndian.Uint32(b[i*4:]))
			if v >= 0xfffffffd { // the markers, as 32-bit values
				v |= 0xffffffff00000000
			}
			pcs[i] = v
		} else {
			pcs[i] = binary.LittleEndian.Uint64(b[i*8:])
		}
	}
	s.nodes[uid] = node{pcs: pcs, link: link}
	return nil
}

// End says how a resolved stack ends.
type End int

// How stacks end.
const (
	EndComplete  End = iota // at the outermost frame
	EndTruncated            // cut at the collector's depth limit, or at a link that is not in the table
	EndFailed               // the unwind failed
)

// Stack returns the frames of frame-info uid frinfo, leaf first, and how the stack ends; ok is
// false when the table has no such frame info (or it has no native stack).
func (s *Stacks) Stack(frinfo uint64) (pcs []uint64, end End, ok bool) {
	uid, ok := s.frames[frinfo]
	if !ok || uid == 0 {
		return nil, EndComplete, false
	}
	seen := map[uint64]bool{}
	for uid != 0 {
		n, ok := s.nodes[uid]
		if !ok || seen[uid] || len(pcs) > maxFrames {
			return pcs, EndTruncated, true
		}
		seen[uid] = true
		for _, pc := range n.pcs {
			switch pc {
			case markLeafCheck:
				continue
			case markTruncated:
				return pcs, EndTruncated, true
			case markFailed:
				return pcs, EndFailed, true
			}
			pcs = append(pcs, pc)
		}
		uid = n.link
	}
	return pcs, EndComplete, true
}
