// Package keytable maps uint64 keys to int32 values in an open-addressing hash table.
package keytable

// Table maps keys other than 0 to int32 values (heap blocks to their events, call tree edges to
// nodes). It is an open-addressing hash table with linear probing: replaying millions of heap
// allocations and frees spent most of its time in Go maps' inserts and deletes.
type Table struct {
	keys  []uint64 // 0: empty
	vals  []int32
	n     int
	shift uint // 64 - log2(len(keys))
}

const minSize = 64

func (t *Table) slot(k uint64) int {
	return int((k * 0x9e3779b97f4a7c15) >> t.shift)
}

// Get returns the value of key k.
func (t *Table) Get(k uint64) (int32, bool) {
	if t.n == 0 {
		return 0, false
	}
	mask := len(t.keys) - 1
	for i := t.slot(k); ; i = (i + 1) & mask {
		switch t.keys[i] {
		case k:
			return t.vals[i], true
		case 0:
			return 0, false
		}
	}
}

// Put sets the value of key k (not 0).
func (t *Table) Put(k uint64, v int32) {
	if 4*(t.n+1) > 3*len(t.keys) {
		t.grow()
	}
	mask := len(t.keys) - 1
	for i := t.slot(k); ; i = (i + 1) & mask {
		switch t.keys[i] {
		case k:
			t.vals[i] = v
			return
		case 0:
			t.keys[i], t.vals[i] = k, v
			t.n++
			return
		}
	}
}

// Del removes key k and returns its value.
func (t *Table) Del(k uint64) (int32, bool) {
	if t.n == 0 {
		return 0, false
	}
	mask := len(t.keys) - 1
	i := t.slot(k)
	for ; t.keys[i] != k; i = (i + 1) & mask {
		if t.keys[i] == 0 {
			return 0, false
		}
	}
	v := t.vals[i]
	// Shift back the entries after it that probed past it, so that no lookup stops short.
	for j := (i + 1) & mask; t.keys[j] != 0; j = (j + 1) & mask {
		if home := t.slot(t.keys[j]); (j-home)&mask >= (j-i)&mask {
			t.keys[i], t.vals[i] = t.keys[j], t.vals[j]
			i = j
		}
	}
	t.keys[i], t.vals[i] = 0, 0
	t.n--
	return v, true
}

func (t *Table) grow() {
	old, oldVals := t.keys, t.vals
	size := max(2*len(old), minSize)
	t.keys, t.vals, t.n = make([]uint64, size), make([]int32, size), 0
	t.shift = 64
	for s := size; s > 1; s >>= 1 {
		t.shift--
	}
	for i, k := range old {
		if k != 0 {
			t.Put(k, oldVals[i])
		}
	}
}

// Each calls fn with every key and value, in no particular order; fn must not change the table.
func (t *Table) Each(fn func(k uint64, v int32)) {
	for i, k := range t.keys {
		if k != 0 {
			fn(k, t.vals[i])
		}
	}
}

// Len returns the number of keys in the table.
func (t *Table) Len() int { return t.n }
