package perfevent

import (
	"encoding/binary"
	"fmt"
	"strings"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"er/internal/perfabi"
)

// ring is one CPU's perf ring buffer: a metadata page (struct
// perf_event_mmap_page) followed by a power-of-2 data area that the kernel
// fills from data_head and that we consume from data_tail.
type ring struct {
	cpu     int
	mem     []byte // the whole mapping (nil for a ring over test memory that we do not own)
	meta    *unix.PerfEventMmapPage
	data    []byte
	scratch []byte // reassembles records that wrap around the end of data
}

// newRing interprets mem (a metadata page of pageSize bytes, then the data
// area) as a ring. mem must be 8-byte aligned.
func newRing(cpu int, mem []byte, pageSize int) (*ring, error) {
	if len(mem) < pageSize || pageSize < int(unsafe.Sizeof(unix.PerfEventMmapPage{})) {
		return nil, fmt.Errorf("perfevent: cpu %d ring: mapping of %d bytes is smaller than its metadata page", cpu, len(mem))
	}
	meta := (*unix.PerfEventMmapPage)(unsafe.Pointer(&mem[0]))
	off, size := meta.Data_offset, meta.Data_size
	if size == 0 { // kernels before 4.1 leave these zero: data follows the first page
		off, size = uint64(pageSize), uint64(len(mem)-pageSize)
	}
	if off > uint64(len(mem)) || size > uint64(len(mem))-off || size == 0 || size&(size-1) != 0 {
		return nil, fmt.Errorf("perfevent: cpu %d ring: bad data area (offset %d, size %d) in a %d-byte mapping", cpu, off, size, len(mem))
	}
	return &ring{cpu: cpu, meta: meta, data: mem[off : off+size]}, nil
}

// mapRing mmaps the ring of perf event fd, with dataPages data pages.
func mapRing(fd, cpu, dataPages int) (*ring, error) {
	page := unix.Getpagesize()
	n := (1 + dataPages) * page
	mem, err := unix.Mmap(fd, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		hint := ""
		if err == unix.EPERM || err == unix.ENOMEM {
			lim, _ := readIntFile(mlockKBPath)
			hint = fmt.Sprintf(" (more than %s = %d KiB per user and RLIMIT_MEMLOCK; use fewer RingPages or raise kernel.perf_event_mlock_kb)", mlockKBPath, lim)
		}
		return nil, fmt.Errorf("perfevent: cpu %d: mmap of %d KiB ring buffer: %w%s", cpu, n/1024, err, hint)
	}
	r, err := newRing(cpu, mem, page)
	if err != nil {
		unix.Munmap(mem)
		return nil, err
	}
	r.mem = mem
	return r, nil
}

// unmap releases the mapping.
func (r *ring) unmap() error {
	if r.mem == nil {
		return nil
	}
	err := unix.Munmap(r.mem)
	r.mem, r.meta, r.data = nil, nil, nil
	return err
}

// pending returns the number of unread bytes.
func (r *ring) pending() uint64 {
	return atomic.LoadUint64(&r.meta.Data_head) - atomic.LoadUint64(&r.meta.Data_tail)
}

// at returns n bytes of the data stream at position pos, reassembled in
// r.scratch when they wrap around the end of the data area.
func (r *ring) at(pos, n uint64) []byte {
	size := uint64(len(r.data))
	start := pos & (size - 1)
	if start+n <= size {
		return r.data[start : start+n]
	}
	if uint64(cap(r.scratch)) < n {
		r.scratch = make([]byte, n)
	}
	buf := r.scratch[:n]
	k := copy(buf, r.data[start:])
	copy(buf[k:], r.data[:n-uint64(k)])
	return buf
}

// drain decodes every complete record between data_tail and data_head, calls
// fn for each, and releases each by storing the new data_tail as soon as fn returns. A malformed
// record is skipped (its size is known) and reported; a corrupt header
// (impossible size) discards the rest of the data, as the stream cannot be resynchronized.
func (r *ring) drain(d *perfabi.Decoder, fn func(perfabi.Record)) error {
	head := atomic.LoadUint64(&r.meta.Data_head) // acquire: the records before head are complete
	tail := atomic.LoadUint64(&r.meta.Data_tail)
	size := uint64(len(r.data))
	var first error
	nerr := 0
	fail := func(pos uint64, err error) {
		if first == nil {
			first = fmt.Errorf("perfevent: cpu %d ring, offset %d (stream position %d): %w", r.cpu, pos&(size-1), pos, err)
		}
		nerr++
	}
	if head-tail > size {
		fail(tail, fmt.Errorf("data_head %d is more than the %d-byte buffer ahead of data_tail %d", head, size, tail))
		tail = head
	}
	for head-tail >= 8 {
		hdr := r.at(tail, 8)
		n := uint64(binary.LittleEndian.Uint16(hdr[6:]))
		if n < 8 || n > head-tail {
			fail(tail, fmt.Errorf("record header (type %d) has size %d with %d bytes left; dropping the rest of the buffer",
				binary.LittleEndian.Uint32(hdr), n, head-tail))
			tail = head
			break
		}
		rec, err := d.Decode(r.at(tail, n))
		if err != nil {
			typ := binary.LittleEndian.Uint32(hdr)
			fail(tail, fmt.Errorf("%s record of %d bytes: %w", strings.ToLower(perfabi.RecordName(typ)), n, err))
		} else {
			fn(rec)
		}
		tail += n
		// Release each record as soon as fn has it: a reader preempted half-way through a full ring
		// (by a target's many runnable threads) lets the kernel write on instead of dropping samples.
		atomic.StoreUint64(&r.meta.Data_tail, tail)
	}
	if head != tail {
		fail(tail, fmt.Errorf("%d bytes left after the last record", head-tail))
		tail = head
	}
	atomic.StoreUint64(&r.meta.Data_tail, tail) // release: the kernel may now overwrite them
	if nerr > 1 {
		return fmt.Errorf("%w (and %d more bad records)", first, nerr-1)
	}
	return first
}
