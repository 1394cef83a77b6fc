package perfevent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"er/internal/perfabi"
)

// Group is one event opened on every online CPU for a task, with a ring buffer per CPU.
//
// Wait and Drain are meant to be called from one goroutine (the reader);
// Close may be called from any goroutine, and makes a blocked Wait return ErrClosed.
type Group struct {
	mu      sync.RWMutex // held for reading while fds or rings are in use; for writing by Close
	drain   sync.Mutex   // serializes Drain (the decoder and rings' scratch are not shared)
	waitMu  sync.Mutex   // guards waiter and noWaiter
	closed  atomic.Bool
	closing sync.WaitGroup // the siblings' files, closed in the background by Close

	fds   []int // one per CPU (the ring's owner, in ring order), then those AddTask redirected
	fdCPU []int // the CPU of each fd
	rings []*ring
	attr  *unix.PerfEventAttr
	opts  Options
	wake  int // eventfd that Close signals to interrupt Wait
	dec   *perfabi.Decoder
	cpus  []int
	pfds  []unix.PollFd
	// waiter is an epoll set of pfds that Wait parks on in Go's network poller (see park); nil
	// until the first Wait, or where the poller cannot take it.
	waiter   *waiter
	noWaiter bool

	sibAttrs []*unix.PerfEventAttr // the attributes of opts.Siblings
	sibFDs   []int                 // their events, in groups led by fds: sibling i of each group at i mod len(sibAttrs)
	sibIDs   map[uint64]int        // their ids: the index in opts.Siblings
}

// OpenTask opens the event described by o for task pid on every online CPU, with inherit so that threads and processes
// the task creates later are counted too, and maps each CPU's ring buffer.
// An inherited per-task event cannot be mmapped when it follows the task
// across CPUs (cpu = -1), hence one event per CPU.
//
// Every event has sample_id_all, mmap2, comm (with exec), task (fork and exit)
// and a CLOCK_MONOTONIC timestamp, and samples IP, TID, TIME, CPU, PERIOD and
// IDENTIFIER, plus CALLCHAIN, REGS_USER and STACK_USER as o asks.
// A pid of 0 means the calling OS thread (see runtime.LockOSThread), not the
// whole Go process. A failure of perf_event_open is an *OpenError.
func OpenTask(pid int, o Options) (*Group, error) {
	pages, err := o.ringPages()
	if err != nil {
		return nil, err
	}
	attr, err := o.attr(pages * unix.Getpagesize())
	if err != nil {
		return nil, err
	}
	dec, err := perfabi.NewDecoder(perfabi.Format{SampleType: attr.Sample_type, ReadFormat: attr.Read_format,
		SampleRegsUser: attr.Sample_regs_user, SampleIDAll: attr.Bits&unix.PerfBitSampleIDAll != 0})
	if err != nil {
		return nil, fmt.Errorf("perfevent: %w", err)
	}
	cpus, err := OnlineCPUs()
	if err != nil {
		return nil, fmt.Errorf("perfevent: %w", err)
	}
	g := &Group{dec: dec, cpus: cpus, wake: -1, attr: attr, opts: o, sibIDs: map[uint64]int{}}
	for _, sb := range o.Siblings {
		g.sibAttrs = append(g.sibAttrs, siblingAttr(attr, sb, pages*unix.Getpagesize()))
	}
	g.wake, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("perfevent: eventfd: %w", err)
	}
	for _, cpu := range cpus {
		var fd int
		var r *ring
		for try := 1; ; try++ {
			if fd, err = openEvent(attr, &o, pid, cpu); err != nil {
				g.Close()
				return nil, err
			}
			if r, err = mapRing(fd, cpu, pages); err != nil {
				unix.Close(fd)
				g.Close()
				return nil, err
			}
			n := len(g.sibFDs)
			if err = g.openSiblings(pid, cpu, fd, fd); err == nil || !errors.Is(err, unix.EINVAL) || try == siblingTries {
				break
			}
			// A sibling refused with EINVAL, in some ten runs under strace -f with the task waiting at
			// the exec gate (TestUnderTracerSetID): the leader and its siblings are opened again, a
			// little later each time (2 to 32 ms).
			for _, sfd := range g.sibFDs[n:] {
				unix.Close(sfd)
			}
			g.sibFDs = g.sibFDs[:n]
			_ = r.unmap()
			unix.Close(fd)
			time.Sleep(time.Duration(1<<try) * time.Millisecond)
		}
		g.fds = append(g.fds, fd)
		g.fdCPU = append(g.fdCPU, cpu)
		g.rings = append(g.rings, r)
		if err != nil {
			g.Close()
			return nil, err
		}
		g.pfds = append(g.pfds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
	}
	g.pfds = append(g.pfds, unix.PollFd{Fd: int32(g.wake), Events: unix.POLLIN})
	return g, nil
}

// AddTask opens the group's event for one more task (a thread of a process being attached to:
// an inherited event follows only the threads created after it) on every CPU, writing into the
// same rings.
func (g *Group) AddTask(pid int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed.Load() {
		return ErrClosed
	}
	var opened []int
	for i, cpu := range g.cpus {
		fd, err := openEvent(g.attr, &g.opts, pid, cpu)
		if err == nil {
			if err = unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, g.fds[i]); err != nil {
				unix.Close(fd)
				err = fmt.Errorf("perfevent: redirecting the event of task %d on cpu %d: %w", pid, cpu, err)
			} else if err = g.openSiblings(pid, cpu, fd, g.fds[i]); err != nil {
				unix.Close(fd)
			}
		}
		if err != nil {
			for _, fd := range opened {
				unix.Close(fd)
			}
			return err
		}
		opened = append(opened, fd)
	}
	g.fds = append(g.fds, opened...)
	g.fdCPU = append(g.fdCPU, g.cpus...)
	return nil
}

// siblingAttr returns the attributes of sibling sb in leader's group: inherited with the leader (and
// with its inherit_stat), the same sample_id trailer and clock, kernel events included (a trace event
// or a context switch fires in the kernel) unless the leader excludes them, and no side-band records
// (the leader has them). A counting sibling samples nothing; a sampling one has the leader's sample
// layout (one decoder reads both) and wakes the reader by a watermark of a quarter of the ring of
// dataBytes, not by its samples (which may come at every context switch).
func siblingAttr(leader *unix.PerfEventAttr, sb Sibling, dataBytes int) *unix.PerfEventAttr {
	idBits := uint64(unix.PERF_SAMPLE_TID | unix.PERF_SAMPLE_TIME | unix.PERF_SAMPLE_ID | unix.PERF_SAMPLE_STREAM_ID |
		unix.PERF_SAMPLE_CPU | unix.PERF_SAMPLE_IDENTIFIER)
	a := &unix.PerfEventAttr{
		Type:        uint32(sb.Type),
		Config:      sb.Config,
		Ext1:        sb.Config1,
		Ext2:        sb.Config2,
		Sample_type: leader.Sample_type & idBits,
		Clockid:     leader.Clockid,
		// One read format in the group: every Read record then has the one layout (the decoder
		// knows no record's event before its trailer), and Count reads the leaders alone.
		Read_format: leader.Read_format,
	}
	a.Size = uint32(unsafe.Sizeof(*a))
	a.Bits = leader.Bits & (unix.PerfBitInherit | unix.PerfBitInheritStat | unix.PerfBitSampleIDAll | unix.PerfBitUseClockID)
	if sb.Sampling() {
		a.Sample_type = leader.Sample_type
		a.Sample_regs_user = leader.Sample_regs_user
		a.Sample_stack_user = leader.Sample_stack_user
		if sb.StackUser != 0 && sb.StackUser < a.Sample_stack_user {
			a.Sample_stack_user = sb.StackUser
		}
		a.Sample_max_stack = leader.Sample_max_stack
		a.Bits |= leader.Bits & (unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv | unix.PerfBitExcludeCallchainKernel)
		a.Bits |= unix.PerfBitWatermark
		a.Wakeup = uint32(max(dataBytes/4, 8))
		a.Sample = sb.Period
		a.Bits |= uint64(sb.Precise&3) << 15 // precise_ip
		if sb.Freq != 0 {
			a.Bits |= unix.PerfBitFreq
			a.Sample = sb.Freq
		}
	}
	return a
}

// siblingTries is how many times Open tries a CPU's siblings that the kernel refused with EINVAL.
const siblingTries = 6

// openSiblings opens the group's sibling events for task pid on cpu in the group led by leader, writing
// into the ring of out.
func (g *Group) openSiblings(pid, cpu, leader, out int) error {
	for i, a := range g.sibAttrs {
		fd, err := unix.PerfEventOpen(a, pid, cpu, leader, unix.PERF_FLAG_FD_CLOEXEC)
		for err == unix.EINTR {
			fd, err = unix.PerfEventOpen(a, pid, cpu, leader, unix.PERF_FLAG_FD_CLOEXEC)
		}
		if err != nil {
			return fmt.Errorf("perfevent: opening sibling event %d (type %d config %d) of task %d on cpu %d: %w",
				i, a.Type, a.Config, pid, cpu, err)
		}
		g.sibFDs = append(g.sibFDs, fd)
		// Its own ring would be another mmap: its records go into the leader's.
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, out); err != nil {
			return fmt.Errorf("perfevent: redirecting sibling event %d of task %d on cpu %d: %w", i, pid, cpu, err)
		}
		var id uint64
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.PERF_EVENT_IOC_ID), uintptr(unsafe.Pointer(&id))); errno != 0 {
			return fmt.Errorf("perfevent: the id of sibling event %d of task %d on cpu %d: %w", i, pid, cpu, errno)
		}
		g.sibIDs[id] = i
	}
	return nil
}

// SiblingIDs returns the ids of the events of Options.Siblings (a Read record's ID), with the index of
// the sibling each is.
func (g *Group) SiblingIDs() map[uint64]int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return maps.Clone(g.sibIDs)
}

// CPUs returns the CPUs the group's events are open on, in ring order.
func (g *Group) CPUs() []int { return g.cpus }

// ioctl applies a PERF_EVENT_IOC_* request to every event (and, through
// inheritance, to their children).
func (g *Group) ioctl(req uint, name string) error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed.Load() {
		return ErrClosed
	}
	for i, fd := range g.fds {
		if err := unix.IoctlSetInt(fd, req, 0); err != nil {
			return fmt.Errorf("perfevent: %s event on cpu %d: %w", name, g.fdCPU[i], err)
		}
	}
	return nil
}

// Count returns the event's count summed over every CPU's event, including the threads and child
// processes it was inherited by, live or exited. For the clock events it is the CPU time, in ns, that the
// samples stand for plus what was not yet sampled when each thread stopped (less than one period a thread).
func (g *Group) Count() (uint64, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed.Load() {
		return 0, ErrClosed
	}
	var total uint64
	for i, fd := range g.fds {
		v, err := g.readCounts(fd)
		if err != nil {
			return 0, fmt.Errorf("perfevent: reading the count of the event on cpu %d: %w", g.fdCPU[i], err)
		}
		total += v[0]
	}
	return total, nil
}

// readCounts reads the count of event fd, and with a group read format those of its siblings after it.
func (g *Group) readCounts(fd int) ([]uint64, error) {
	if g.attr.Read_format&unix.PERF_FORMAT_GROUP == 0 {
		var buf [8]byte
		n, err := unix.Read(fd, buf[:])
		if err != nil || n != len(buf) {
			return nil, fmt.Errorf("%d bytes, %v", n, err)
		}
		return []uint64{binary.NativeEndian.Uint64(buf[:])}, nil
	}
	want := 1 + len(g.sibAttrs)
	buf := make([]byte, 8+16*want)
	n, err := unix.Read(fd, buf)
	if err != nil || n != len(buf) {
		return nil, fmt.Errorf("%d bytes of a group of %d, %v", n, want, err)
	}
	if nr := binary.NativeEndian.Uint64(buf); nr != uint64(want) {
		return nil, fmt.Errorf("a group of %d events, want %d", nr, want)
	}
	v := make([]uint64, want)
	for i := range v {
		v[i] = binary.NativeEndian.Uint64(buf[8+16*i:])
	}
	return v, nil
}

// SiblingCounts returns the counts of Options.Siblings, summed like Count's.
func (g *Group) SiblingCounts() ([]uint64, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed.Load() {
		return nil, ErrClosed
	}
	n := len(g.sibAttrs)
	total := make([]uint64, n)
	if g.attr.Read_format&unix.PERF_FORMAT_GROUP != 0 {
		for i, fd := range g.fds {
			v, err := g.readCounts(fd)
			if err != nil {
				return nil, fmt.Errorf("perfevent: reading the counts of the group on cpu %d: %w", g.fdCPU[i], err)
			}
			for j := range total {
				total[j] += v[1+j]
			}
		}
		return total, nil
	}
	var buf [8]byte
	for i, fd := range g.sibFDs {
		got, err := unix.Read(fd, buf[:])
		if err != nil || got != len(buf) {
			return nil, fmt.Errorf("perfevent: reading the count of sibling event %d: %d bytes, %v", i%n, got, err)
		}
		total[i%n] += binary.NativeEndian.Uint64(buf[:])
	}
	return total, nil
}

// Enable starts counting and sampling.
func (g *Group) Enable() error { return g.ioctl(unix.PERF_EVENT_IOC_ENABLE, "enable") }

// Disable stops counting and sampling; records already written stay readable.
func (g *Group) Disable() error { return g.ioctl(unix.PERF_EVENT_IOC_DISABLE, "disable") }

// Close interrupts a blocked Wait, then unmaps the rings and closes the events.
// Unread records are lost. Close is safe to call more than once and from any
// goroutine, but not from within a Drain callback (it waits for Drain to return). The siblings'
// events may still be closing in the background when it returns: see WaitClosed.
func (g *Group) Close() error {
	if g.closed.Swap(true) {
		return nil
	}
	if g.wake >= 0 {
		var one [8]byte
		one[0] = 1
		unix.Write(g.wake, one[:])
	}
	g.mu.Lock() // wait for Wait, Drain and ioctls to leave
	defer g.mu.Unlock()
	var errs []error
	for _, r := range g.rings {
		if err := r.unmap(); err != nil {
			errs = append(errs, fmt.Errorf("perfevent: cpu %d: munmap: %w", r.cpu, err))
		}
	}
	// Closing a trace event's last file unregisters the kernel's probe and waits for an RCU grace
	// period: 13 ms for each sibling here, half of what `er collect /bin/true` took. It goes on in the
	// background while the caller writes its files (WaitClosed waits for it).
	if sib := g.sibFDs; len(sib) > 0 && (ReleaseSiblings == nil || !ReleaseSiblings(sib)) {
		g.closing.Add(1)
		go func() {
			defer g.closing.Done()
			for _, fd := range sib {
				unix.Close(fd)
			}
		}()
	}
	g.sibFDs = nil
	for _, fd := range g.fds {
		if err := unix.Close(fd); err != nil {
			errs = append(errs, fmt.Errorf("perfevent: close: %w", err))
		}
	}
	if g.waiter != nil {
		g.waiter.file.Close()
		g.waiter = nil
	}
	if g.wake >= 0 {
		unix.Close(g.wake)
	}
	g.rings, g.fds = nil, nil
	return errors.Join(errs...)
}

// ReleaseSiblings, when set, is given the files of a closing Group's siblings (the runtime counter's
// trace events) to release elsewhere; it closes them and returns true, or returns false, closing
// none, and Close closes them in the background.
var ReleaseSiblings func(fds []int) bool

// WaitClosed waits until the files that Close left to close in the background are closed.
func (g *Group) WaitClosed() { g.closing.Wait() }

// Wait blocks until some ring has data to read, the timeout passes, or
// Close is called. It returns nil on data or timeout (then Drain), ErrClosed
// after Close, and ErrTaskExited once the task and all the threads and
// processes it created have exited (then Drain a last time and stop).
// A negative timeout waits without limit.
func (g *Group) Wait(timeout time.Duration) error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed.Load() {
		return ErrClosed
	}
	ms := -1
	if timeout >= 0 {
		ms = int((timeout + time.Millisecond - 1) / time.Millisecond)
	}
	pfds := make([]unix.PollFd, len(g.pfds))
	copy(pfds, g.pfds)
	if ms != 0 && g.park(timeout) {
		ms = 0 // ready, or the timeout passed: see which
	}
	n, err := unix.Poll(pfds, ms)
	if err == unix.EINTR {
		return nil
	}
	if err != nil {
		return fmt.Errorf("perfevent: poll: %w", err)
	}
	if g.closed.Load() {
		return ErrClosed
	}
	if n == 0 {
		return nil
	}
	hup := 0
	for _, p := range pfds[:len(g.rings)] {
		if p.Revents&unix.POLLHUP != 0 {
			hup++
		}
	}
	if hup == len(g.rings) && hup > 0 {
		return ErrTaskExited
	}
	return nil
}

// RingBytes returns the data bytes of each CPU's ring.
func (g *Group) RingBytes() uint64 {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if len(g.rings) == 0 {
		return 0
	}
	return uint64(len(g.rings[0].data))
}

// Pending returns the number of unread bytes in all rings.
func (g *Group) Pending() uint64 {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var n uint64
	for _, r := range g.rings {
		n += r.pending()
	}
	return n
}

// Drain reads every complete record from every ring, calls fn for each, and
// then frees their space in the ring. Records come in order within one CPU's
// ring, not across rings: sort by time if order matters.
//
// The perfabi.Record passed to fn, and every slice in it (Callchain, Regs, Stack,
// BuildID), are only valid during fn: they are reused or point into the ring.
// Copy what you keep.
//
// A malformed record is skipped and reported in the returned error, which
// names the CPU ring and offset; the other records are still delivered.
func (g *Group) Drain(fn func(perfabi.Record)) error {
	g.drain.Lock()
	defer g.drain.Unlock()
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed.Load() {
		return ErrClosed
	}
	var errs []error
	for _, r := range g.rings {
		if err := r.drain(g.dec, fn); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// waiter is an epoll set of a group's files, registered with Go's network poller.
type waiter struct {
	file *os.File
	conn syscall.RawConn
	n    int // the files of pfds in the set
}

// park waits in Go's network poller until one of the group's files is ready or timeout passes
// (a negative timeout waits without limit), so that the waiting goroutine is parked rather than in a
// system call: a 10 ms poll(2) loop kept the runtime's sysmon thread waking every 20 µs to take the
// processor back from the blocked thread, 65% of er's own CPU during a collection (90 ms of each
// second). It returns false, having waited for nothing, where the poller cannot take the set; the
// caller then polls. g.mu is held for reading.
func (g *Group) park(timeout time.Duration) bool {
	w, ok := g.parker()
	if !ok {
		return false
	}
	deadline := time.Time{}
	if timeout >= 0 {
		deadline = time.Now().Add(timeout)
	}
	if err := w.file.SetReadDeadline(deadline); err != nil {
		return false
	}
	// A perf event's readiness is one-shot: its poll reports the kernel's wakeup once and clears it.
	// The poller's own check of the set, when it reports the set ready, calls that poll and takes the
	// wakeup, and epoll_wait on the set then finds nothing: so once the poller has woken this goroutine
	// for the set, that is the wakeup. (Waiting for epoll_wait to find a file never woke before the
	// timeout: the reader read only on loop's tick.)
	var ev [1]unix.EpollEvent
	woken := false
	err := w.conn.Read(func(fd uintptr) bool {
		if woken {
			return true
		}
		woken = true
		n, err := unix.EpollWait(int(fd), ev[:], 0)
		return n > 0 || (err != nil && err != unix.EINTR)
	})
	return err == nil || errors.Is(err, os.ErrDeadlineExceeded)
}

// parker returns the group's waiter, making it or adding the files opened since; false where it
// cannot be made (then Wait polls).
func (g *Group) parker() (*waiter, bool) {
	g.waitMu.Lock()
	defer g.waitMu.Unlock()
	if g.noWaiter {
		return nil, false
	}
	if g.waiter == nil {
		ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			g.noWaiter = true
			return nil, false
		}
		if err := unix.SetNonblock(ep, true); err != nil {
			unix.Close(ep)
			g.noWaiter = true
			return nil, false
		}
		f := os.NewFile(uintptr(ep), "perf events")
		conn, err := f.SyscallConn()
		if err != nil || f.SetReadDeadline(time.Time{}) != nil {
			f.Close()
			g.noWaiter = true
			return nil, false
		}
		g.waiter = &waiter{file: f, conn: conn}
	}
	w := g.waiter
	for ; w.n < len(g.pfds); w.n++ {
		fd := g.pfds[w.n].Fd
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: fd}
		var err error
		if cerr := w.conn.Control(func(ep uintptr) { err = unix.EpollCtl(int(ep), unix.EPOLL_CTL_ADD, int(fd), &ev) }); cerr != nil {
			err = cerr
		}
		if err != nil {
			w.file.Close()
			g.waiter, g.noWaiter = nil, true
			return nil, false
		}
	}
	return w, true
}
