package gprofng

import (
	"encoding/binary"
	"fmt"
	"io"

	"er/internal/experiment"
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

// maxFrames bounds a resolved stack, and the stack uids a resolution follows: a chain of links
// longer than this is damage (or a cycle). gprofng 2.40 records at most 2048 frames.
const maxFrames = 1 << 16

// A stack table links stacks by their shared outer parts, so that a small file can name stacks
// of many more frames than it holds: a chain of 54,000 one-frame uids, each the stack of an event,
// is 1.46 billion frames (a 6 MB experiment). er holds each distinct stack whole (and its analysis does), so the
// frames of the distinct stacks that the events ask for are bounded: after maxResolved of them
// (16,777,216: er print's peak on the 6 MB experiment is 540 MB), each further stack keeps its
// first cutFrames frames and ends in <Truncated-stack>, and the reader says how many it cut. A
// variable for the tests.
var maxResolved = 1 << 24

// cutFrames are the frames kept of each stack resolved after maxResolved frames were.
const cutFrames = 64

// Stacks is the stack table of data.frameinfo: each frame-info uid (a data packet's FRINFO)
// names a native stack uid; a stack uid names some frames, leaf first, and the uid of the stack
// that goes on after them (its callers), so that stacks share their common outer parts. Each
// stack is resolved once: the stacks of a chain of uids resolved together share one array, each
// the suffix of the one before.
type Stacks struct {
	frames map[uint64]uint64 // frame-info uid -> native stack uid (0: none)
	index  map[uint64]int32  // stack uid -> its node
	nodes  []node
	// Java: a frame packet holds a Java stack; OpenMP: one holds an OpenMP state or stack.
	Java, OpenMP bool

	walks    uint32  // resolutions made, to find cycles
	path     []int32 // the nodes of the current resolution
	left     int     // frames that may still be resolved (maxResolved less those resolved)
	resolved int     // frames of the distinct stacks asked for (Stack)
	cut      int     // stacks cut to cutFrames because left ran out
}

type node struct {
	pcs  []uint64 // leaf first, without leaf-check markers
	link uint64   // the uid of the stack that goes on (0: none)
	stop End      // where a marker in pcs ends the stack (the link is not followed); EndComplete: none

	done bool     // res and end hold its resolution
	res  []uint64 // its frames, then a pseudo-frame where it does not end complete
	end  End
	walk uint32 // the resolution that last visited it

	asked   bool     // the stack of an event: head and headEnd hold what Stack returns
	head    []uint64 // res, or its first cutFrames frames once the budget ran out
	headEnd End
}

func newStacks() *Stacks {
	return &Stacks{frames: map[uint64]uint64{}, index: map[uint64]int32{}, left: maxResolved}
}

// ReadStacks reads data.frameinfo (file names it in errors; wordSize is the target's, 32 or 64).
func ReadStacks(file string, r io.Reader, size int64, wordSize int) (*Stacks, string, error) {
	s := newStacks()
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
	if _, dup := s.index[uid]; dup {
		return nil // the first definition holds
	}
	n := node{pcs: make([]uint64, 0, len(b)/w), link: link}
	for i := 0; i < len(b) && n.stop == EndComplete; i += w {
		var v uint64
		if w == 4 {
			v = uint64(binary.LittleEndian.Uint32(b[i:]))
			if v >= 0xfffffffd { // the markers, as 32-bit values
				v |= 0xffffffff00000000
			}
		} else {
			v = binary.LittleEndian.Uint64(b[i:])
		}
		switch v {
		case markLeafCheck:
		case markTruncated:
			n.stop = EndTruncated
		case markFailed:
			n.stop = EndFailed
		default:
			n.pcs = append(n.pcs, v)
		}
	}
	s.index[uid] = int32(len(s.nodes))
	s.nodes = append(s.nodes, n)
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

// pseudo is the pseudo-frame that ends a stack that ends so.
func (e End) pseudo() uint64 {
	if e == EndFailed {
		return experiment.FrameUnwindFailed
	}
	return experiment.FrameTruncated
}

// Stack returns the frames of frame-info uid frinfo, leaf first, and how the stack ends; ok is
// false when the table has no such frame info (or it has no native stack). The frames are the
// table's: the caller must not change them.
func (s *Stacks) Stack(frinfo uint64) (pcs []uint64, end End, ok bool) {
	fr, end, ok := s.frinfo(frinfo)
	if end != EndComplete {
		fr = fr[:len(fr)-1]
	}
	return fr, end, ok
}

// frinfo returns the frames of frame-info uid frinfo as er holds them (with a pseudo-frame last
// where the stack does not end complete; capped, so that an append copies them), and how the
// stack ends.
func (s *Stacks) frinfo(frinfo uint64) ([]uint64, End, bool) {
	uid, ok := s.frames[frinfo]
	if !ok || uid == 0 {
		return nil, EndComplete, false
	}
	i, ok := s.index[uid]
	if !ok {
		return []uint64{experiment.FrameTruncated}, EndTruncated, true
	}
	n := &s.nodes[i]
	if !n.asked {
		n.asked = true
		lim := maxFrames
		if s.left <= 0 {
			lim = cutFrames
		}
		steps, over := 0, false
		if !n.done {
			steps, over = s.resolve(i, lim)
		}
		n.head, n.headEnd = n.res, n.end
		switch {
		case s.left > 0:
		case over:
			s.cut++
		case len(n.head) > cutFrames+1 || len(n.head) == cutFrames+1 && n.end == EndComplete:
			n.head, n.headEnd = cut(n.head, cutFrames), EndTruncated
			s.cut++
		}
		s.left -= max(len(n.head), steps)
		s.resolved += len(n.head)
	}
	return n.head, n.headEnd, true
}

// cut returns the first k frames of stack fr, then <Truncated-stack>.
func cut(fr []uint64, k int) []uint64 {
	out := make([]uint64, k+1)
	copy(out, fr[:k])
	out[k] = experiment.FrameTruncated
	return out
}

// resolve resolves node h: it follows the links from h until a node already resolved, the end of
// the stack, a link to no uid, a cycle or maxFrames links, and resolves every node it passed in
// one array, each the suffix of the one before. When the frames go on past lim, h alone is
// resolved, to its first lim frames, and over is true. It returns the nodes it visited.
func (s *Stacks) resolve(h int32, lim int) (steps int, over bool) {
	s.walks++
	path := s.path[:0]
	var tail []uint64 // the frames of a node resolved before, where the path reached one
	end, frames := EndComplete, 0
	for i := h; ; {
		n := &s.nodes[i]
		if n.done {
			tail, end = n.res, n.end
			frames += len(tail)
			if end != EndComplete {
				frames-- // its pseudo-frame
			}
			break
		}
		if n.walk == s.walks { // a cycle: it ends where it closes
			end = EndTruncated
			break
		}
		n.walk = s.walks
		path = append(path, i)
		frames += len(n.pcs)
		if n.stop != EndComplete {
			end = n.stop
			break
		}
		if n.link == 0 {
			break
		}
		if frames > lim || len(path) > maxFrames {
			end = EndTruncated
			break
		}
		next, ok := s.index[n.link]
		if !ok {
			end = EndTruncated
			break
		}
		i = next
	}
	s.path = path
	if frames > lim { // too deep: h keeps its first lim frames
		fr := make([]uint64, 0, lim+1)
		for _, i := range path {
			fr = append(fr, s.nodes[i].pcs[:min(len(s.nodes[i].pcs), lim-len(fr))]...)
		}
		fr = append(fr, tail[:min(len(tail), lim-len(fr))]...)
		n := &s.nodes[h]
		n.res, n.end, n.done = append(fr, experiment.FrameTruncated), EndTruncated, true
		return len(path), true
	}
	size := frames
	if end != EndComplete {
		size++
	}
	arr := make([]uint64, size)
	pos := 0
	for _, i := range path {
		n := &s.nodes[i]
		n.res, n.end, n.done = arr[pos:size:size], end, true
		pos += copy(arr[pos:], n.pcs)
	}
	copy(arr[pos:], tail)
	if end != EndComplete {
		arr[size-1] = end.pseudo()
	}
	return len(path), false
}

// Resolved returns the frames of the distinct stacks that Stack returned, and how many of them
// it cut because they came after maxResolved frames.
func (s *Stacks) Resolved() (frames, cut int) { return s.resolved, s.cut }
