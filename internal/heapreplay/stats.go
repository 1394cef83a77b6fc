package heapreplay

import (
	"sort"

	"er/internal/sat"
)

// SizeBuckets are the upper bounds (exclusive) of the size ranges of the heap and I/O statistics'
// histograms; a size at or above the last bound is in the last range.
var SizeBuckets = []int64{1 << 10, 8 << 10, 32 << 10, 128 << 10, 256 << 10, 512 << 10, 1000 << 10,
	10 << 20, 100 << 20, 1 << 30, 10 << 30, 100 << 30, 1 << 40, 10 << 40}

// SizeBucketLabels name the size ranges: SizeBucketLabels[i] is the range below SizeBuckets[i];
// the last one is the range from the last bound up.
var SizeBucketLabels = []string{"0KB - 1KB", "1KB - 8KB", "8KB - 32KB", "32KB - 128KB", "128KB - 256KB",
	"256KB - 512KB", "512KB - 1000KB", "1000KB - 10MB", "10MB - 100MB", "100MB - 1GB", "1GB - 10GB",
	"10GB - 100GB", "100GB - 1TB", "1TB - 10TB", ">= 10TB"}

// SizeBucket returns the index of the size range holding n bytes.
func SizeBucket(n int64) int {
	return sort.Search(len(SizeBuckets), func(i int) bool { return n < SizeBuckets[i] })
}

// SizeStats summarizes sizes: how many, their sum, the smallest and largest, and a histogram over
// the ranges of SizeBuckets. Time and Longest sum and bound durations (I/O statistics).
type SizeStats struct {
	Count, Bytes  int64
	Min, Max      int64 // 0 when Count is 0
	Hist          [15]int64
	Time, Longest int64 // ns
}

// Add counts one size n that took dur nanoseconds.
func (s *SizeStats) Add(n, dur int64) {
	if s.Count == 0 || n < s.Min {
		s.Min = n
	}
	s.Max = max(s.Max, n)
	s.Count++
	s.Bytes = sat.Add(s.Bytes, n)
	s.Hist[SizeBucket(n)]++
	s.Time = sat.Add(s.Time, dur)
	s.Longest = max(s.Longest, dur)
}

// Merge adds the sizes of o.
func (s *SizeStats) Merge(o *SizeStats) {
	if o.Count == 0 {
		return
	}
	if s.Count == 0 || o.Min < s.Min {
		s.Min = o.Min
	}
	s.Max = max(s.Max, o.Max)
	s.Count = sat.Add(s.Count, o.Count)
	s.Bytes = sat.Add(s.Bytes, o.Bytes)
	for i := range s.Hist {
		s.Hist[i] = sat.Add(s.Hist[i], o.Hist[i])
	}
	s.Time = sat.Add(s.Time, o.Time)
	s.Longest = max(s.Longest, o.Longest)
}

// Peak is the largest heap of one process: the bytes of its live blocks at their highest.
type Peak struct {
	Exp   int    // experiment index (0-based) in the list given to the analysis
	Pid   uint32 // process
	Bytes int64  // bytes allocated and not yet freed at the peak
	Time  int64  // ns since the experiment's start when the peak was first reached
}

// Stats is what replaying the heap events of experiments found.
type Stats struct {
	Events       int64     // heap events replayed
	Allocs       SizeStats // successful allocations, by size requested
	Leaks        SizeStats // allocations never freed
	Peak         Peak      // the process with the highest peak
	Peaks        []Peak
	DoubleFrees  int64 // frees (and reallocs) of blocks already freed: ignored
	UnknownFrees int64 // frees of blocks never allocated while tracing: ignored
	FailedAllocs int64 // allocations that returned no block
}

// Merge adds the statistics of another experiment.
func (h *Stats) Merge(o *Stats) {
	h.Events = sat.Add(h.Events, o.Events)
	h.Allocs.Merge(&o.Allocs)
	h.Leaks.Merge(&o.Leaks)
	h.Peaks = append(h.Peaks, o.Peaks...)
	if o.Peak.Bytes > h.Peak.Bytes || len(h.Peaks) == len(o.Peaks) {
		h.Peak = o.Peak
	}
	h.DoubleFrees = sat.Add(h.DoubleFrees, o.DoubleFrees)
	h.UnknownFrees = sat.Add(h.UnknownFrees, o.UnknownFrees)
	h.FailedAllocs = sat.Add(h.FailedAllocs, o.FailedAllocs)
}

// AddPeak counts the peak of one more process: the highest so far becomes Peak.
func (h *Stats) AddPeak(p Peak) {
	h.Peaks = append(h.Peaks, p)
	if p.Bytes > h.Peak.Bytes || len(h.Peaks) == 1 {
		h.Peak = p
	}
}
