package collect

import "testing"

func TestScaleCounts(t *testing.T) {
	for _, tc := range []struct {
		name           string
		counted, cpuNS int64
		want           int64
		wantA          int64 // thread 1's count after, of 600 ms
	}{
		{"steal", 1010e6, 1000e6, 1000e6, 594059405},
		{"equal", 1000e6, 1000e6, 1000e6, 600e6},
		{"rusage holds more", 1000e6, 1200e6, 1000e6, 600e6},
		{"beyond steal", 1000e6, 850e6, 1000e6, 600e6},
		{"no rusage", 1000e6, 0, 1000e6, 600e6},
		{"no count", 0, 1000e6, 0, 600e6},
	} {
		threads := map[uint32]int64{1: 600e6, 2: 410e6}
		if got := scaleCounts(threads, tc.counted, tc.cpuNS); got != tc.want || threads[1] != tc.wantA {
			t.Errorf("%s: scaleCounts(%d, %d) = %d, thread 1 %d; want %d, %d", tc.name, tc.counted, tc.cpuNS, got, threads[1], tc.want, tc.wantA)
		}
	}
}
