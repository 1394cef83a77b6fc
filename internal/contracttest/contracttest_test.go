package contracttest

import (
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	out := Parse(t, "x.c", []byte("struct er_msg 32\nfield er_msg.kind 4 4\nconst ER_MAGIC 1380274481\nstring ER_NAME erc\n"))
	if out.Structs["er_msg"] != 32 || out.Fields["er_msg.kind"] != (Field{4, 4}) || out.Consts["ER_MAGIC"] != 1380274481 || out.Strings["ER_NAME"] != "erc" {
		t.Errorf("%+v", out)
	}
}

func TestFieldNames(t *testing.T) {
	got := FieldNames(" uint32_t a, b;\n char name[16]; struct x *next; ")
	if want := []string{"a", "b", "name", "next"}; !slices.Equal(got, want) {
		t.Errorf("FieldNames = %v, want %v", got, want)
	}
	if s := StripComments("a /* b */ c // d\ne"); s != "a  c \ne" {
		t.Errorf("StripComments = %q", s)
	}
}
