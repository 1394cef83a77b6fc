package collect

import (
	"bytes"
	"os"
	"strconv"
)

// The steal time in the samples of microstates. A sample there stands for its thread's time on a CPU
// since its previous sample, by the switch records, and on a virtual machine that time holds what the
// hypervisor took: one -p hi sample stood for 65.6 ms in a function that ran for 0.5 s beside two CPU
// hogs (the vCPU taken away, the sampling timer unable to fire), 6.7% over what it measured. Reading
// the scheduler's runtime count in every sample (as counted samples do, sampleCounts.stealFree)
// doubled what microstates cost a program that switches often (a pipe ping-pong on one CPU, 1.93 s
// under er without it, 4.07 s with it: the group's counts read at each context-switch sample). So
// here the machine's own account says it: /proc/stat gives each CPU's steal time, which er reads at
// each drain. A sample that stands for more than its thread can have run without a sample (the
// kernel's tick, a millisecond, and an interval on each CPU: the per-CPU events of a thread that
// moves count apart), and whose CPU was stolen from meanwhile, has the excess taken out, at most as
// much as that CPU's steal over the readings around it.

// cpuSteal is each CPU's steal time as /proc/stat said it at recent readings.
type cpuSteal struct {
	hooks
	path   string
	times  []int64   // when each reading was taken (ns since the start)
	steal  [][]int64 // each reading's steal time by CPU (ns)
	margin int64     // the most a sample of a thread that ran throughout stands for without steal
}

// stealKeep is how long readings are kept: a sample is handled within a few drains of its time.
const stealKeep = int64(10e9)

// userHZ is the unit of /proc/stat's times (USER_HZ, 100 on Linux for every architecture).
const userHZ = 100

// tick takes a reading before the rings are read: one after each sample.
func (c *cpuSteal) tick(now int64) { c.read(now) }

// read takes a reading at now, dropping those older than stealKeep but the last before that.
func (c *cpuSteal) read(now int64) {
	b, err := os.ReadFile(c.path) // (a few hundred bytes, ten times a second)
	if err != nil {
		return
	}
	row := parseSteal(b)
	if row == nil {
		return
	}
	c.times = append(c.times, now)
	c.steal = append(c.steal, row)
	i := 0
	for i+1 < len(c.times) && c.times[i+1] < now-stealKeep {
		i++
	}
	if i > 0 {
		c.times = append(c.times[:0], c.times[i:]...)
		c.steal = append(c.steal[:0], c.steal[i:]...)
	}
}

// parseSteal returns the steal time of each CPU line ("cpuN user nice system idle iowait irq softirq
// steal ...") of /proc/stat, by CPU number, in ns; nil when there is none.
func parseSteal(b []byte) []int64 {
	var row []int64
	for line := range bytes.Lines(b) {
		f := bytes.Fields(line)
		if len(f) < 9 || !bytes.HasPrefix(f[0], []byte("cpu")) || len(f[0]) == 3 {
			continue
		}
		cpu, err := strconv.Atoi(string(f[0][3:]))
		if err != nil || cpu < 0 || cpu > 1<<16 {
			continue
		}
		v, err := strconv.ParseInt(string(f[8]), 10, 64)
		if err != nil || v < 0 {
			continue
		}
		for len(row) <= cpu {
			row = append(row, 0)
		}
		row[cpu] = v * (1e9 / userHZ)
	}
	return row
}

// free returns the part of period, the CPU time of a sample on cpu at t (ns since the start), that
// its thread ran: all of it unless it is more than margin and cpu was stolen from between the last
// reading before the sample's span and the first after it (one is taken now, at now, where none is
// yet).
func (c *cpuSteal) free(cpu uint32, t, period, now int64) int64 {
	if c == nil || period <= c.margin || len(c.times) == 0 {
		return period
	}
	if c.times[len(c.times)-1] < t {
		c.read(now)
	}
	from, to := -1, -1
	for i, rt := range c.times {
		if rt <= t-period {
			from = i
		}
		if rt >= t && to < 0 {
			to = i
		}
	}
	if from < 0 || to < 0 || int(cpu) >= len(c.steal[from]) || int(cpu) >= len(c.steal[to]) {
		return period
	}
	stolen := c.steal[to][cpu] - c.steal[from][cpu]
	if stolen <= 0 {
		return period
	}
	return period - min(period-c.margin, stolen)
}
