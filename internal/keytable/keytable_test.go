package keytable

import (
	"math/rand/v2"
	"testing"
)

// The table agrees with a Go map through random puts, gets and deletes, with keys that collide in
// their home slots and runs that wrap around the end of the table.
func TestTable(t *testing.T) {
	for _, keys := range []struct {
		name string
		key  func(r *rand.Rand) uint64
	}{
		{"random", func(r *rand.Rand) uint64 { return 1 + r.Uint64N(1<<40) }},
		{"few, crowded", func(r *rand.Rand) uint64 { return 1 + r.Uint64N(200) }},
		{"aligned blocks", func(r *rand.Rand) uint64 { return 0x10000 + r.Uint64N(5000)*16 }},
	} {
		r := rand.New(rand.NewPCG(1, 2))
		var tb Table
		want := map[uint64]int32{}
		for i := range 200_000 {
			k := keys.key(r)
			switch r.IntN(3) {
			case 0:
				tb.Put(k, int32(i))
				want[k] = int32(i)
			case 1:
				v, ok := tb.Del(k)
				w, wok := want[k]
				if ok != wok || v != w {
					t.Fatalf("%s: del(%#x) = %d, %v; want %d, %v", keys.name, k, v, ok, w, wok)
				}
				delete(want, k)
			default:
				v, ok := tb.Get(k)
				w, wok := want[k]
				if ok != wok || v != w {
					t.Fatalf("%s: get(%#x) = %d, %v; want %d, %v", keys.name, k, v, ok, w, wok)
				}
			}
			if tb.Len() != len(want) {
				t.Fatalf("%s: %d entries, want %d", keys.name, tb.n, len(want))
			}
		}
		seen := 0
		tb.Each(func(k uint64, v int32) {
			if w, ok := want[k]; !ok || w != v {
				t.Errorf("%s: each gave %#x=%d, want %d (%v)", keys.name, k, v, w, ok)
			}
			seen++
		})
		if seen != len(want) {
			t.Errorf("%s: each gave %d entries, want %d", keys.name, seen, len(want))
		}
	}
}
