// Package sat holds saturating int64 arithmetic: sums of recorded values that stop at the largest
// (or smallest) int64 instead of wrapping.
package sat

import "math"

// Metric values are sums of what an experiment recorded: periods, durations, byte counts. Crafted
// or damaged input can make them add up past the largest int64; the sums saturate there (and at
// the smallest, for negative values) instead of wrapping to a meaningless value of the other sign.

// Add returns a+b, or math.MaxInt64 or math.MinInt64 when that overflows.
func Add(a, b int64) int64 {
	s := a + b
	if (s > a) != (b > 0) { // overflowed: the sum moved the other way than b
		if b > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return s
}

// Sub returns a-b, or math.MaxInt64 or math.MinInt64 when that overflows.
func Sub(a, b int64) int64 {
	d := a - b
	if (d < a) != (b > 0) {
		if b > 0 {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	return d
}

// Mul returns a*b, or math.MaxInt64 or math.MinInt64 when that overflows.
func Mul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	p := a * b
	if p/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		if (a > 0) == (b > 0) {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return p
}

// Float converts f to int64, saturating where it is out of range (Go leaves that conversion
// to the machine: on amd64 it gives math.MinInt64); NaN gives 0.
func Float(f float64) int64 {
	switch {
	case f != f:
		return 0
	case f >= math.MaxInt64: // 2^63 as a float64
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// AddTo adds v to dst, element by element, saturating.
func AddTo(dst, v []int64) {
	for m, x := range v {
		dst[m] = Add(dst[m], x)
	}
}
