package collect

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"er/internal/experiment"
)

// The collector library and er talk through two files in the experiment directory, created before
// the target starts (docs/trace-format.md, "Processes and control"):
//
//   - .proc/state, a page er writes and every library instance maps read-only: recording stopped
//     (-t, -L), er collect has ended (every instance then ends: it closes its files and leaves the
//     experiment alone), or paused by er (a -y signal sent to er);
//   - .control, a FIFO each instance writes 32-byte messages to: a sample point or a pause or
//     resume asked for by a signal the process received, and the start of each instance.
//
// Each library instance writes its files into .proc/<pid>.<start_ns>/; at the end er moves them
// into the experiment of the process image that was running then.
const (
	procDirName = ".proc"
	stateName   = "state"
	controlName = ".control"
	// The state page's words are 32 bits: the offsets of the stop and pause_all words. The words'
	// indexes and values, the messages' layout and kinds are generated from internal/tracedef
	// (controllayout.go).
	stateStop  = 4 * stateStopWord
	statePause = 4 * statePauseWord
)

type message struct {
	kind, pid, tid uint32
	time           int64 // CLOCK_MONOTONIC ns
	signo          uint32
	aux            uint32
}

func decodeMessage(b []byte) (message, bool) {
	if len(b) < messageSize || binary.LittleEndian.Uint32(b[msgOffMagic:]) != messageMagic {
		return message{}, false
	}
	return message{kind: binary.LittleEndian.Uint32(b[msgOffKind:]), pid: binary.LittleEndian.Uint32(b[msgOffPid:]),
		tid: binary.LittleEndian.Uint32(b[msgOffTid:]), time: int64(binary.LittleEndian.Uint64(b[msgOffTime:])),
		signo: binary.LittleEndian.Uint32(b[msgOffArg:]), aux: binary.LittleEndian.Uint32(b[msgOffAux:])}, true
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

// end tells every library instance that er collect has ended: each stops recording, makes its
// mappings of the experiment's files anonymous, closes them, and starts nothing more (nor do the
// processes it starts after that).
func (c *control) end() {
	if c != nil && c.state != nil {
		c.set(stateStop, stopEnded)
	}
}

// close stops reading; pending messages can still be received until the channel closes. The
// instances are told that er has ended first.
func (c *control) close() {
	if c == nil {
		return
	}
	c.end()
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
	if m.kind == msgJavaInterp {
		// Not a time: the interpreter's code, whose frames the unwinder reads the method of.
		s.stacks.setInterp(m.pid, uint64(m.time), uint64(m.time)+uint64(m.signo))
		return
	}
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
	case msgNoStart:
		s.libNoStarts = append(s.libNoStarts, libNoStart{libStart: libStart{m.pid, t}, err: unix.Errno(m.signo), euid: m.aux})
	case msgNoFile:
		s.libNoStarts = append(s.libNoStarts, libNoStart{libStart: libStart{m.pid, t}, err: unix.EMFILE, nofile: [2]uint32{m.signo, m.aux}})
	case msgLandlock:
		s.libLandlocks = append(s.libLandlocks, libStart{m.pid, t})
	case msgUnreachable:
		s.libUnreachable = append(s.libUnreachable, libNoStart{libStart: libStart{m.pid, t}, euid: m.signo})
	case msgSetUID:
		s.libSetUIDs = append(s.libSetUIDs, libNoStart{libStart: libStart{m.pid, t}, euid: m.aux})
	case msgStopped:
		if unix.Errno(m.signo) == unix.EFBIG {
			// The process's own file size limit: its recording stops, not the others'.
			text := fmt.Sprintf("the collector library stopped recording in process %d at %.3f s: its trace files reached the process's "+
				"file size limit (RLIMIT_FSIZE, which the program lowered); what was recorded before is kept", m.pid, float64(t)/1e9)
			if p.open() {
				p.w.Event(experiment.Event{Time: t, Kind: "warning", Pid: m.pid, Text: text})
			}
			fmt.Fprintf(s.stderr, "er collect: warning: %s\n", text)
			return
		}
		err := fmt.Errorf("the collector library in process %d: writing its trace: %v", m.pid, unix.Errno(m.signo))
		if s.writeErr != nil && p.open() { // else writeFailed's warning says it, in every experiment
			p.w.Event(experiment.Event{Time: t, Kind: "warning", Pid: m.pid, Text: fmt.Sprintf("%v: the library stopped recording at %.3f s", err, float64(t)/1e9)})
		}
		s.writeFailed(err)
	case msgHandler:
		s.handlerTaken(p, m)
	case msgSeccomp:
		s.seccompInstalled(p, m, t)
	}
}

// handlerTaken warns, in the experiment of the process and on stderr, that the program has a
// handler of its own for the sample or pause signal, and what that means for it.
func (s *Session) handlerTaken(p *proc, m message) {
	sig := unixSignal(m.signo)
	name := unix.SignalName(sig)
	what := "-l takes for sample points: each " + name + " from elsewhere than er collect (the program's own too) takes a sample point"
	if sig == s.spec.PauseSignal {
		what = "-y takes to pause and resume recording: each " + name + " from elsewhere than er collect (the program's own too) pauses or resumes recording"
	}
	prog := "?"
	if p != nil {
		prog = p.prog
	}
	text := fmt.Sprintf("process %d (%s) has a handler of its own for %s, which %s, and then runs the handler; "+
		"the %s sent to er collect itself, which it passes on to the target, do not reach the handler", m.pid, prog, name, what, name)
	if p.open() {
		p.w.Event(experiment.Event{Time: m.time - s.startNS, Kind: "warning", Pid: m.pid, Text: text})
	}
	if s.handlersSaid++; s.handlersSaid <= 3 {
		fmt.Fprintf(s.stderr, "er collect: warning: %s\n", text)
	} else if s.handlersSaid == 4 {
		fmt.Fprintf(s.stderr, "er collect: and more processes with handlers of their own for %s (see their experiments' logs)\n", name)
	}
}

func unixSignal(n uint32) unix.Signal { return unix.Signal(n) }

// relaySignal sends sig to process pid with sigqueue's si_code and relayCookie as its value, as
// glibc's sigqueue does (rt_sigqueueinfo).
func relaySignal(pid int, sig syscall.Signal) error {
	var info [128]byte // siginfo_t: signo, errno, code, then (at 16) pid, uid, and the value at 24
	binary.LittleEndian.PutUint32(info[0:], uint32(sig))
	code := int32(siQueue)
	binary.LittleEndian.PutUint32(info[8:], uint32(code))
	binary.LittleEndian.PutUint32(info[16:], uint32(os.Getpid()))
	binary.LittleEndian.PutUint32(info[20:], uint32(os.Getuid()))
	binary.LittleEndian.PutUint64(info[24:], relayCookie)
	_, _, e := unix.Syscall(unix.SYS_RT_SIGQUEUEINFO, uintptr(pid), uintptr(sig), uintptr(unsafe.Pointer(&info[0])))
	if e != 0 {
		return e
	}
	return nil
}

// siQueue is SI_QUEUE, the si_code of sigqueue's signals.
const siQueue = -1
