package sat

import (
	"math"
	"testing"
)

func TestSaturatingArithmetic(t *testing.T) {
	const mx, mn = int64(math.MaxInt64), int64(math.MinInt64)
	for _, c := range []struct{ a, b, sum, diff, prod int64 }{
		{1, 2, 3, -1, 2},
		{mx, 1, mx, mx - 1, mx},
		{mx, mx, mx, 0, mx},
		{mn, -1, mn, mn + 1, mx},
		{mn, 1, mn + 1, mn, mn},
		{mn, mn, mn, 0, mx},
		{mx, mn, -1, mx, mn},
		{0, mn, mn, mx, 0},
		{-1, mn, mn, mx, mx},
		{1 << 62, 2, 1<<62 + 2, 1<<62 - 2, mx},
		{1 << 32, -(1 << 32), 0, 1 << 33, mn},
		{-3, 4, 1, -7, -12},
	} {
		if got := Add(c.a, c.b); got != c.sum {
			t.Errorf("Add(%d, %d) = %d, want %d", c.a, c.b, got, c.sum)
		}
		if got := Sub(c.a, c.b); got != c.diff {
			t.Errorf("Sub(%d, %d) = %d, want %d", c.a, c.b, got, c.diff)
		}
		if got := Mul(c.a, c.b); got != c.prod {
			t.Errorf("Mul(%d, %d) = %d, want %d", c.a, c.b, got, c.prod)
		}
		if got := Mul(c.b, c.a); got != c.prod {
			t.Errorf("Mul(%d, %d) = %d, want %d", c.b, c.a, got, c.prod)
		}
	}
	for f, want := range map[float64]int64{1e300: mx, -1e300: mn, math.NaN(): 0, 9.5: 9, -9.5: -9, math.Inf(1): mx, 1 << 63: mx, -(1 << 63): mn} {
		if got := Float(f); got != want {
			t.Errorf("Float(%g) = %d, want %d", f, got, want)
		}
	}
	v := []int64{mx - 1, 5, mn + 1}
	AddTo(v, []int64{2, 5, -2})
	if v[0] != mx || v[1] != 10 || v[2] != mn {
		t.Errorf("AddTo = %v", v)
	}
}
