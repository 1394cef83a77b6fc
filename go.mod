module er

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0
	github.com/ianlancetaylor/demangle v0.0.0-20260724033716-83e58baca724
	github.com/ulikunitz/xz v0.5.17
	golang.org/x/sys v0.49.0
)

require (
	github.com/google/pprof v0.0.0-20261105003125-4bf881d7fb0b
	golang.org/x/arch v0.32.0
)

require github.com/klauspost/compress v1.20.4
