package gprofng

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"er/internal/experiment"
	"er/internal/regfile"
)

// overviewFile holds the usage of the process at each sample point.
const overviewFile = "overview"

// Usage is one record of gprofng's overview file: the process's resource usage at one sample
// point. The record has the layout of Solaris's prusage_t for a 64-bit process (504 bytes): a
// 32-bit lwp id and count, 20 times (seconds and nanoseconds, 8 bytes each: the time stamp, the
// creation and termination times, the real, user, system, trap, text, data and kernel page fault,
// user lock, sleep, wait-CPU and stopped times, and 6 unused), then 22 counters of 8 bytes (minor
// and major faults, swaps, input and output blocks, messages sent and received, signals,
// voluntary and involuntary context switches, system calls, characters of I/O, and 10 unused).
// gprofng 2.40 on Linux fills it from getrusage(RUSAGE_SELF): the times user and system (the
// others are 0), the counters faults, blocks and context switches (the others are 0); its
// time stamp is of a clock other than the one of log.xml's times, and RTime the time since the
// first point.
type Usage struct {
	Tstamp, Create, RTime int64 // ns
	UTime, STime          int64 // ns of CPU time, of all threads
	TTime, TFTime, DFTime int64 // ns of trap CPU, text and data page fault waits
	KFTime, LTime         int64 // ns of kernel page fault and user lock waits
	SlpTime, WTime        int64 // ns of other sleep, and of waits for a CPU
	StopTime              int64 // ns stopped
	MinFlt, MajFlt        int64
	NSwap, InBlock        int64
	OutBlock              int64
	MsgSent, MsgRecv      int64
	Signals               int64
	VolCtxSw, InvolCtxSw  int64
	Syscalls, IOChars     int64
}

// usageSize is the size of a record of a 64-bit process.
const usageSize = 8 + 20*16 + 22*8

// maxOverviewSize bounds the overview file: a record a second for more than a year.
const maxOverviewSize = 64 << 20

// ReadOverview reads the records of an overview file (file names it in errors) of a 64-bit
// process. A last record cut short (an experiment still being written) is left out, and warning
// says so; a time or a count out of range is an error that names the file, the offset and the
// field.
func ReadOverview(file string, b []byte) (recs []Usage, warning string, err error) {
	le := binary.LittleEndian
	times := []string{"tstamp", "create", "term", "rtime", "utime", "stime", "ttime", "tftime", "dftime", "kftime", "ltime", "slptime", "wtime", "stoptime"}
	counters := []string{"minf", "majf", "nswap", "inblk", "oublk", "msnd", "mrcv", "sigs", "vctx", "ictx", "sysc", "ioch"}
	for off := 0; off+usageSize <= len(b); off += usageSize {
		r := b[off : off+usageSize]
		var t [14]int64
		for i, name := range times {
			at := 8 + 16*i
			sec, ns := int64(le.Uint64(r[at:])), int64(le.Uint64(r[at+8:]))
			if sec < 0 || sec > 1<<33 || ns < 0 || ns >= 1e9 {
				return nil, "", fmt.Errorf("%s: offset %d: record %d: pr_%s %d s %d ns: not a time", file, off+at, off/usageSize, name, sec, ns)
			}
			t[i] = sec*1e9 + ns
		}
		var c [12]int64
		for i, name := range counters {
			at := 8 + 20*16 + 8*i
			v := le.Uint64(r[at:])
			if v > 1<<62 {
				return nil, "", fmt.Errorf("%s: offset %d: record %d: pr_%s %d: out of range", file, off+at, off/usageSize, name, v)
			}
			c[i] = int64(v)
		}
		recs = append(recs, Usage{Tstamp: t[0], Create: t[1], RTime: t[3], UTime: t[4], STime: t[5], TTime: t[6],
			TFTime: t[7], DFTime: t[8], KFTime: t[9], LTime: t[10], SlpTime: t[11], WTime: t[12], StopTime: t[13],
			MinFlt: c[0], MajFlt: c[1], NSwap: c[2], InBlock: c[3], OutBlock: c[4], MsgSent: c[5], MsgRecv: c[6],
			Signals: c[7], VolCtxSw: c[8], InvolCtxSw: c[9], Syscalls: c[10], IOChars: c[11]})
	}
	if n := len(b) % usageSize; n != 0 {
		warning = fmt.Sprintf("%s: ends with %d bytes of a %d-byte record, left out: the experiment was not finished", file, n, usageSize)
	}
	return recs, warning, nil
}

// readOverview reads the overview file of the experiment in dir, and gives each of the log's
// sample points the usage of its record (the record of point N is the file's Nth, from 0): er's
// sample points are numbered from 1, so point N is er's N+1. A point without a record, or a record
// without a point, is left out with a warning; gprofng records no resident set size or thread
// count (MemoryUnknown).
func readOverview(dir string, l *Log) ([]experiment.OverviewSample, []string, error) {
	file := filepath.Join(dir, overviewFile)
	b, err := regfile.ReadFile(file, maxOverviewSize, overviewFile)
	if errors.Is(err, fs.ErrNotExist) {
		if len(l.Samples) == 0 {
			return nil, nil, nil
		}
		return nil, []string{fmt.Sprintf("%s: missing; the usage at the %d sample points is unknown", overviewFile, len(l.Samples))}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if l.WordSize != 64 && l.WordSize != 0 {
		return nil, []string{fmt.Sprintf("%s: the records of a %d-bit process, which er does not read: the usage at the sample points is unknown", overviewFile, l.WordSize)}, nil
	}
	recs, w, err := ReadOverview(file, b)
	if err != nil {
		return nil, nil, err
	}
	var warns []string
	if w != "" {
		warns = append(warns, strings.TrimPrefix(w, dir+string(filepath.Separator)))
	}
	var out []experiment.OverviewSample
	used := map[int]bool{}
	missing := 0
	for _, p := range l.Samples {
		if p.ID >= len(recs) || used[p.ID] {
			missing++
			continue
		}
		used[p.ID] = true
		r := recs[p.ID]
		out = append(out, experiment.OverviewSample{Time: p.Time, Pid: l.Pid, Sample: uint32(p.ID) + 1,
			UserNS: r.UTime, SystemNS: r.STime, MinFlt: r.MinFlt, MajFlt: r.MajFlt,
			VolCtxSw: r.VolCtxSw, InvolCtxSw: r.InvolCtxSw, MemoryUnknown: true, Label: p.Label})
	}
	if missing > 0 {
		warns = append(warns, fmt.Sprintf("%s: %d of log.xml's %d sample points have no record in it; they are left out", overviewFile, missing, len(l.Samples)))
	}
	if extra := len(recs) - len(used); extra > 0 {
		warns = append(warns, fmt.Sprintf("%s: %d of its %d records have no sample point in log.xml; they are left out", overviewFile, extra, len(recs)))
	}
	return out, warns, nil
}
