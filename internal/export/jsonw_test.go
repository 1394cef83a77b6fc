package export

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

// encodedBy returns what the jsonWriter wrote with write.
func encodedBy(write func(j *jsonWriter)) string {
	var b bytes.Buffer
	j := newJSONWriter(&b)
	write(j)
	j.flush()
	return b.String()
}

// TestJSONString: strings as encoding/json writes them: every byte alone, every escape, U+2028,
// invalid UTF-8, and random strings of bytes and runes.
func TestJSONString(t *testing.T) {
	var cases []string
	for c := range 256 {
		cases = append(cases, string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"b")
	}
	cases = append(cases, "", "<Total>", "f;g", "a&b", "\u2028\u2029", "é\xffx", "\xe2\x80", "日本語", `"\`)
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, r.IntN(20))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		cases = append(cases, string(b), string([]rune{rune(r.IntN(0x3000)), rune(r.IntN(0x11000))}))
	}
	for _, s := range cases {
		want, _ := json.Marshal(s)
		if got := encodedBy(func(j *jsonWriter) { j.str(s) }); got != string(want) {
			t.Errorf("str(%q) = %s, want %s", s, got, want)
		}
	}
}

// TestJSONNumbers: integers and floats as encoding/json writes them (the µs of a Chrome trace:
// ns/1e3, from 0 to far beyond any run, and the exponent forms).
func TestJSONNumbers(t *testing.T) {
	floats := []float64{0, 1, -1, 0.001, 1e-6, 9.99e-7, 1e-7, 1.5e-300, 1e20, 1e21, 123456789.123, -2.5e-8, math.MaxFloat64, math.SmallestNonzeroFloat64}
	r := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		floats = append(floats, float64(r.Int64())/1e3, float64(r.Int64N(1e12))/1e3, r.NormFloat64()*math.Pow(10, float64(r.IntN(60)-30)))
	}
	for _, f := range floats {
		want, _ := json.Marshal(f)
		if got := encodedBy(func(j *jsonWriter) { j.float(f) }); got != string(want) {
			t.Errorf("float(%v) = %s, want %s", f, got, want)
		}
	}
	for _, v := range []int64{0, -1, math.MaxInt64, math.MinInt64, r.Int64()} {
		want, _ := json.Marshal(v)
		if got := encodedBy(func(j *jsonWriter) { j.int(v) }); got != string(want) {
			t.Errorf("int(%d) = %s", v, got)
		}
	}
	if got := encodedBy(func(j *jsonWriter) { j.uint(math.MaxUint64) }); got != "18446744073709551615" {
		t.Errorf("uint = %s", got)
	}
}
