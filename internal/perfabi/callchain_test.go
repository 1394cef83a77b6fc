package perfabi

import (
	"reflect"
	"testing"
)

func TestSplitCallchain(t *testing.T) {
	const k1, k2, u1, u2 = 0xffffffff81000010, 0xffffffff81000020, 0x401000, 0x402000
	tests := []struct {
		cc           []uint64
		kernel, user []uint64
	}{
		{[]uint64{ContextKernel, k1, k2, ContextUser, u1, u2}, []uint64{k1, k2}, []uint64{u1, u2}},
		{[]uint64{ContextUser, u1, u2}, nil, []uint64{u1, u2}},
		{[]uint64{ContextKernel, k1}, []uint64{k1}, nil},
		{[]uint64{k1, u1}, []uint64{k1}, []uint64{u1}},                                       // no markers: by address
		{[]uint64{ContextUser, u1, 1<<64 - 32, 0x5, ContextUser, u2}, nil, []uint64{u1, u2}}, // hypervisor frames dropped
		{nil, nil, nil},
	}
	for _, tt := range tests {
		k, u := SplitCallchain(tt.cc)
		if !reflect.DeepEqual(k, tt.kernel) || !reflect.DeepEqual(u, tt.user) {
			t.Errorf("SplitCallchain(%#x) = %#x, %#x; want %#x, %#x", tt.cc, k, u, tt.kernel, tt.user)
		}
	}
}
