package collect

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"er/internal/experiment"
)

// The collector library and er talk through two files in the experiment directory, created before
// the target starts (docs/trace-format.md, "Processes and control"):
//
//   - .proc/state, a page er writes and every library instance maps read-only: recording stopped
//     for good (-t, -L), or paused by er (a -y signal sent to er);
//   - .control, a FIFO each instance writes 32-byte messages to: a sample point or a pause or
//     resume asked for by a signal the process received, and the start of each instance.
//
// Each library instance writes its files into .proc/<pid>.<start_ns>/; at the end er moves them
// into the experiment of the process image that was running then.
const (
	procDirName  = ".proc"
	stateName    = "state"
	controlName  = ".control"
	stateMagic   = 0x53524545 // "EERS", ER_STATE_MAGIC
	messageMagic = 0x31435245 // "ERC1", ER_MSG_MAGIC
	messageSize  = 32         // sizeof(struct er_msg)
	stateStop    = 8          // offset of the stop word (ER_STATE_STOP)
	statePause   = 12         // offset of the pause_all word (ER_STATE_PAUSE_ALL)
)

// The offsets of the fields of a message (struct er_msg in preload/c/collector.h). TestContract
// compares them, the magic numbers and the message kinds with the library's header.
const (
	msgOffMagic = 0
	msgOffKind  = 4
	msgOffPid   = 8
	msgOffTid   = 12
	msgOffTime  = 16
	msgOffArg   = 24 // the signal (sample, pause, resume) or the errno (stopped)
)

// Control message kinds.
const (
	msgSample  = 1
	msgPaused  = 2
	msgResumed = 3
	msgStarted = 4
	msgForked  = 5
	msgExeced  = 6
	msgStopped = 7 // the library stopped recording for good: signo holds the errno
)

type message struct {
	kind, pid, tid uint32
	time           int64 // CLOCK_MONOTONIC ns
	signo          uint32
}

func decodeMessage(b []byte) (message, bool) {
	if len(b) < messageSize || binary.LittleEndian.Uint32(b[msgOffMagic:]) != messageMagic {
		return message{}, false
	}
	return message{kind: binary.LittleEndian.Uint32(b[msgOffKind:]), pid: binary.LittleEndian.Uint32(b[msgOffPid:]),
		tid: binary.LittleEndian.Uint32(b[msgOffTid:]), time: int64(binary.LittleEndian.Uint64(b[msgOffTime:])),
		signo: binary.LittleEndian.Uint32(b[msgOffArg:])}, true
}

// control is er's end of the channel.
type control struct {
	state []byte   // the mapped state page
	fifo  *os.File // read end of .control (opened read-write, so it never sees end of file)
	msgs  chan message
}

// openControl creates .proc/, the state page and the FIFO in the experiment directory dir, and
// starts reading messages.
func openControl(dir string) (*control, error) {
	pd := filepath.Join(dir, procDirName)
	if err := os.Mkdir(pd, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(pd, stateName), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	page := make([]byte, 4096)
	binary.LittleEndian.PutUint32(page, stateMagic)
	binary.LittleEndian.PutUint32(page[4:], 1)
	if _, err := f.Write(page); err != nil {
		return nil, err
	}
	state, err := unix.Mmap(int(f.Fd()), 0, len(page), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %v", f.Name(), err)
	}
	fifo, err := holdControl(dir)
	if err != nil {
		_ = unix.Munmap(state)
		return nil, err
	}
	c := &control{state: state, fifo: fifo, msgs: make(chan message, 256)}
	go c.read()
	return c, nil
}

func (c *control) read() {
	defer close(c.msgs)
	buf := make([]byte, messageSize)
	for {
		if _, err := io.ReadFull(c.fifo, buf); err != nil {
			return
		}
		if m, ok := decodeMessage(buf); ok {
			c.msgs <- m
		}
	}
}

// set writes a word of the state page.
func (c *control) set(off int, v uint32) {
	if c != nil {
		binary.LittleEndian.PutUint32(c.state[off:], v)
	}
}

// holdControl creates the FIFO .control in the experiment directory dir and holds it open: the
// collector library sends its messages on it, and readers tell by it that er collect is still
// recording (without the library, that is all it is for).
func holdControl(dir string) (*os.File, error) {
	fifoPath := filepath.Join(dir, controlName)
	if err := unix.Mkfifo(fifoPath, 0o600); err != nil {
		return nil, fmt.Errorf("creating %s: %v", fifoPath, err)
	}
	return os.OpenFile(fifoPath, os.O_RDWR, 0)
}

// barrierKind is the kind of the message er writes to its own FIFO to know that the reader has taken
// every message written before it (no library message has it).
const barrierKind = 0xffffffff

// barrierWait bounds the wait for the barrier: the reader takes it at once unless er is starved.
const barrierWait = 5 * time.Second

// all returns every message written to the FIFO so far: the reader may lag behind the library's
// writes (beside two CPU hogs, an instance's start message was still in the FIFO when er collect
// decided that the instance never ran), so er writes a barrier message and takes messages until
// the reader hands it over. Messages written later (a descendant still running) come after it.
func (c *control) all() []message {
	if c == nil {
		return nil
	}
	b := make([]byte, messageSize)
	binary.LittleEndian.PutUint32(b[msgOffMagic:], messageMagic)
	binary.LittleEndian.PutUint32(b[msgOffKind:], barrierKind)
	if _, err := c.fifo.Write(b); err != nil {
		return c.pending()
	}
	var out []message
	timeout := time.After(barrierWait)
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				return out
			}
			if m.kind == barrierKind {
				return out
			}
			out = append(out, m)
		case <-timeout:
			return append(out, c.pending()...)
		}
	}
}

// close stops reading; pending messages can still be received until the channel closes.
func (c *control) close() {
	if c == nil {
		return
	}
	_ = c.fifo.Close()
	_ = unix.Munmap(c.state)
	c.state = nil
}

// pending takes the messages that are waiting, without blocking; not the barrier's.
func (c *control) pending() []message {
	if c == nil {
		return nil
	}
	var out []message
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				return out
			}
			if m.kind != barrierKind {
				out = append(out, m)
			}
		default:
			return out
		}
	}
}

// handleMessage acts on one message of the collector library.
func (s *Session) handleMessage(m message) {
	t := m.time - s.startNS
	p := s.imageAt(m.pid, t)
	switch m.kind {
	case msgSample:
		if p.open() {
			s.imagePoint(p, t, "signal "+unix.SignalName(unixSignal(m.signo)))
		}
	case msgPaused, msgResumed:
		if p == nil {
			return
		}
		paused := m.kind == msgPaused
		p.addToggle(t, paused)
		if p.open() {
			kind := map[bool]string{true: "pause", false: "resume"}[paused]
			p.w.Event(experiment.Event{Time: t, Kind: kind, Pid: m.pid, Text: fmt.Sprintf("recording %sd by %s", kind, unix.SignalName(unixSignal(m.signo)))})
		}
	case msgStarted, msgForked, msgExeced:
		s.libraryInstances++
		// Which image it ran in is decided at the end: the message can come before er reads the
		// exec that started the image.
		s.libStarts = append(s.libStarts, libStart{m.pid, t})
	case msgStopped:
		err := fmt.Errorf("the collector library in process %d: writing its trace: %v", m.pid, unix.Errno(m.signo))
		if s.writeErr != nil && p.open() { // else writeFailed's warning says it, in every experiment
			p.w.Event(experiment.Event{Time: t, Kind: "warning", Pid: m.pid, Text: fmt.Sprintf("%v: the library stopped recording at %.3f s", err, float64(t)/1e9)})
		}
		s.writeFailed(err)
	}
}

func unixSignal(n uint32) unix.Signal { return unix.Signal(n) }

// relocateLibraryData moves the files each collector-library instance wrote under .proc/ into the
// experiment of the image it ran in, and removes .proc/ and the FIFO. Data of images that are not
// followed is removed. Data that cannot be moved stays in .proc/ (the reader finds it there).
func (s *Session) relocateLibraryData() {
	pd := filepath.Join(s.dir, procDirName)
	ents, err := os.ReadDir(pd)
	if err != nil {
		return
	}
	var dropped, kept int
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		pidStr, startStr, ok := strings.Cut(e.Name(), ".")
		pid, err1 := strconv.ParseUint(pidStr, 10, 32)
		start, err2 := strconv.ParseInt(startStr, 10, 64)
		src := filepath.Join(pd, e.Name())
		if !ok || err1 != nil || err2 != nil {
			continue
		}
		p := s.imageAt(uint32(pid), start-s.startNS)
		if p == nil || p.w == nil {
			dropped++
			_ = os.RemoveAll(src)
			continue
		}
		files, _ := os.ReadDir(src)
		moved := true
		for _, f := range files {
			if f.Name() == "info" || f.IsDir() {
				continue
			}
			dst := filepath.Join(p.w.Dir(), f.Name())
			if _, err := os.Lstat(dst); err == nil {
				// A second instance in one image (a library loaded twice): keep the first.
				s.founder.w.Event(experiment.Event{Kind: "warning", Pid: p.pid, Text: fmt.Sprintf("collector library data %s/%s: the experiment %s already has that file; ignored", e.Name(), f.Name(), filepath.Base(p.w.Dir()))})
				continue
			}
			if err := os.Rename(filepath.Join(src, f.Name()), dst); err != nil {
				moved = false
				s.founder.w.Event(experiment.Event{Kind: "warning", Pid: p.pid, Text: "moving the collector library's data: " + err.Error()})
			}
		}
		if moved {
			_ = os.RemoveAll(src)
		} else {
			kept++
		}
	}
	if dropped > 0 {
		s.founder.w.Event(experiment.Event{Kind: "comment", Text: fmt.Sprintf("%d processes traced by the collector library were not followed (-F %s); their data was discarded", dropped, s.spec.Follow)})
	}
	_ = os.Remove(filepath.Join(s.dir, controlName))
	if kept > 0 {
		s.founder.w.Event(experiment.Event{Kind: "warning", Text: fmt.Sprintf("the collector library's data of %d process images could not be moved into their experiments: it stays in %s", kept, procDirName)})
		return
	}
	_ = os.RemoveAll(pd)
}
