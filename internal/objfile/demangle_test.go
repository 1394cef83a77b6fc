package objfile

import "testing"

func TestDemangle(t *testing.T) {
	cases := []struct {
		in, long, short string
	}{
		{"main", "main", "main"},
		{"compute.cold", "compute.cold", "compute.cold"},
		{"_ZN2ns5plainEid", "ns::plain(int, double)", "ns::plain"},
		{"_ZNK2ns3BoxIiE3getEv", "ns::Box<int>::get() const", "ns::Box::get"},
		{"_Z3maxIiET_S0_S0_", "int max<int>(int, int)", "max"},
		{"_ZNSt6vectorIiSaIiEE9push_backERKi", "std::vector<int, std::allocator<int> >::push_back(int const&)", "std::vector::push_back"},
		{"_ZN1A1fEv.constprop.0", "A::f() [clone .constprop.0]", "A::f"},
		{"_Z3foov@plt", "foo()@plt", "foo@plt"},
		{"puts@plt", "puts@plt", "puts@plt"},
		// Rust legacy: the hash is dropped.
		{"_ZN3std2rt10lang_start17h0123456789abcdefE", "std::rt::lang_start", "std::rt::lang_start"},
		// Rust v0.
		{"_RNvCs1234_7mycrate3foo", "mycrate::foo", "mycrate::foo"},
		{"_RINvNtCs1234_4core3mem4swaplEB4_", "core::mem::swap::<i32>", "core::mem::swap"},
		// Not valid manglings: unchanged.
		{"_Z", "_Z", "_Z"},
		{"_Zgarbage", "_Zgarbage", "_Zgarbage"},
		{"_Rx", "_Rx", "_Rx"},
	}
	for _, c := range cases {
		if got := Demangle(c.in, NameLong); got != c.long {
			t.Errorf("Demangle(%q, NameLong) = %q, want %q", c.in, got, c.long)
		}
		if got := Demangle(c.in, NameShort); got != c.short {
			t.Errorf("Demangle(%q, NameShort) = %q, want %q", c.in, got, c.short)
		}
		if got := Demangle(c.in, NameMangled); got != c.in {
			t.Errorf("Demangle(%q, NameMangled) = %q, want it unchanged", c.in, got)
		}
	}
}

func FuzzDemangle(f *testing.F) {
	for _, s := range []string{"_ZN2ns5plainEid", "_ZNK2ns3BoxIiE3getEv", "_RINvNtCs1234_4core3mem4swaplEB4_",
		"_ZN3std2rt10lang_start17h0123456789abcdefE", "_Z3foov@plt", "_ZSt4cout", "main"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		for _, style := range []NameStyle{NameLong, NameShort, NameMangled} {
			if out := Demangle(name, style); out == "" && name != "" {
				t.Errorf("Demangle(%q, %d) is empty", name, style)
			}
		}
	})
}
