package heapreplay

import "testing"

func TestSizeBuckets(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want int
	}{{0, 0}, {1023, 0}, {1024, 1}, {8191, 1}, {8192, 2}, {1000 << 10, 7}, {200000000, 9}, {10 << 40, 14}, {1 << 62, 14}} {
		if got := SizeBucket(c.n); got != c.want {
			t.Errorf("SizeBucket(%d) = %d (%s), want %d", c.n, got, SizeBucketLabels[got], c.want)
		}
	}
	if len(SizeBucketLabels) != len(SizeBuckets)+1 || len(SizeStats{}.Hist) != len(SizeBucketLabels) {
		t.Error("bucket tables differ in length")
	}
	var a, b SizeStats
	a.Add(10, 5)
	b.Add(3, 1)
	b.Add(5000, 9)
	a.Merge(&b)
	if a.Count != 3 || a.Bytes != 5013 || a.Min != 3 || a.Max != 5000 || a.Hist[0] != 2 || a.Hist[1] != 1 || a.Time != 15 || a.Longest != 9 {
		t.Errorf("%+v", a)
	}
}

// Stats.Merge and AddPeak keep the highest peak, and the first where no process has one above 0.
func TestStatsPeaks(t *testing.T) {
	var a, b Stats
	a.AddPeak(Peak{Pid: 1, Bytes: 0})
	if a.Peak.Pid != 1 || len(a.Peaks) != 1 {
		t.Errorf("first peak %+v", a.Peak)
	}
	a.AddPeak(Peak{Pid: 2, Bytes: 100})
	a.AddPeak(Peak{Pid: 3, Bytes: 50})
	b.AddPeak(Peak{Pid: 4, Bytes: 70})
	b.FailedAllocs, b.DoubleFrees, b.UnknownFrees, b.Events = 1, 2, 3, 4
	a.Merge(&b)
	if a.Peak.Pid != 2 || len(a.Peaks) != 4 || a.FailedAllocs != 1 || a.DoubleFrees != 2 || a.UnknownFrees != 3 || a.Events != 4 {
		t.Errorf("merged %+v", a)
	}
	var c Stats
	c.Merge(&b)
	if c.Peak.Pid != 4 {
		t.Errorf("a merge into no peaks takes the other's: %+v", c.Peak)
	}
}
