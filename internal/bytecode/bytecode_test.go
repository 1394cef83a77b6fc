package bytecode

import (
	"reflect"
	"testing"
)

func TestDecode(t *testing.T) {
	// static int f(int n) { int s = 0; for (int i = 0; i < n; i++) s += i; return s; } and more.
	code := []byte{
		0x03,        // 0 iconst_0
		0x3c,        // 1 istore_1
		0x03,        // 2 iconst_0
		0x3d,        // 3 istore_2
		0x1c,        // 4 iload_2
		0x1a,        // 5 iload_0
		0xa2, 0, 13, // 6 if_icmpge 19
		0x1b, 0x1c, 0x60, 0x3c, // 9 iload_1, iload_2, iadd, istore_1
		0x84, 2, 1, // 13 iinc 2, 1
		0xa7, 0xff, 0xf4, // 16 goto 4
		0x10, 0xfe, // 19 bipush -2
		0x11, 0x01, 0x00, // 21 sipush 256
		0xb6, 0x00, 0x0c, // 24 invokevirtual #12
		0xb9, 0x00, 0x07, 2, 0, // 27 invokeinterface #7, 2
		0xbc, 10, // 32 newarray int
		0xc4, 0x15, 0x01, 0x00, // 34 wide iload 256
		0xaa, 0, // 38 tableswitch, padded to 40
		0, 0, 0, 20, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 10, 0, 0, 0, 12, // default 58, 1: 48, 2: 50
		0xac, // 60 ireturn
	}
	want := []Inst{
		{0, 1, "iconst_0"}, {1, 1, "istore_1"}, {2, 1, "iconst_0"}, {3, 1, "istore_2"}, {4, 1, "iload_2"}, {5, 1, "iload_0"},
		{6, 3, "if_icmpge 19"}, {9, 1, "iload_1"}, {10, 1, "iload_2"}, {11, 1, "iadd"}, {12, 1, "istore_1"}, {13, 3, "iinc 2, 1"},
		{16, 3, "goto 4"}, {19, 2, "bipush -2"}, {21, 3, "sipush 256"}, {24, 3, "invokevirtual #12"},
		{27, 5, "invokeinterface #7, 2"}, {32, 2, "newarray int"}, {34, 4, "wide iload 256"},
		{38, 22, "tableswitch { 1: 48, 2: 50, default: 58 }"}, {60, 1, "ireturn"},
	}
	if got := Decode(code); !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%v\nwant\n%v", got, want)
	}
	// An undefined opcode and a cut instruction end the decoding with an instruction of the rest.
	if got := Decode([]byte{0x00, 0xfe, 0x00}); !reflect.DeepEqual(got, []Inst{{0, 1, "nop"}, {1, 2, "<bad opcode 0xfe>"}}) {
		t.Errorf("bad opcode: %v", got)
	}
	if got := Decode([]byte{0xb6, 0x00}); !reflect.DeepEqual(got, []Inst{{0, 2, "<truncated invokevirtual>"}}) {
		t.Errorf("truncated: %v", got)
	}
	// lookupswitch, at 1 (padded to 4).
	ls := []byte{0x00, 0xab, 0, 0, 0, 0, 0, 30, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 20}
	if got := Decode(ls); !reflect.DeepEqual(got, []Inst{{0, 1, "nop"}, {1, 19, "lookupswitch { -1: 21, default: 31 }"}}) {
		t.Errorf("lookupswitch: %v", got)
	}
}

func TestOpcodes(t *testing.T) {
	// Every opcode 0x00-0xca is defined, none above.
	for op := 0; op < 256; op++ {
		if defined := opcodes[op].name != ""; defined != (op <= 0xca) {
			t.Errorf("opcode %#x: %q", op, opcodes[op].name)
		}
	}
	for op, name := range map[byte]string{0x2a: "aload_0", 0x4b: "astore_0", 0x6f: "ddiv", 0x77: "dneg", 0x94: "lcmp", 0xb1: "return", 0xbe: "arraylength"} {
		if opcodes[op].name != name {
			t.Errorf("opcode %#x is %q, want %q", op, opcodes[op].name, name)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte{0xaa, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0xc4, 0x84, 0, 1, 0, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		n := 0
		for _, in := range Decode(b) {
			if in.BCI != n || in.Len <= 0 {
				t.Fatalf("instruction %+v at %d", in, n)
			}
			n += in.Len
		}
		if n != len(b) {
			t.Fatalf("instructions cover %d of %d bytes", n, len(b))
		}
	})
}
