# er: build, test, demo and benchmarks. `make demo` and `make test` are all the set-up a fresh machine needs.
GO      ?= go
GOFLAGS ?=
BIN     := bin
LINKS   := collect er_print er_archive er_rm er_cp er_mv analyzer
CC      ?= gcc
# The collector library's flags; preload/build.go has the same (its tests check).
PRELOAD_CFLAGS := -O2 -g -Wall -Wextra -fPIC -std=gnu11 -fvisibility=hidden -shared -Wl,-e,er_probe_main
PRELOAD_LIBS   := -ldl -lpthread
PRELOAD_SRCS   := $(wildcard preload/c/*.c)
# The JDK's headers, for the JVMTI agent (preload/c/java.c), where a JDK is installed (Debian's
# default-jdk-headless); preload/build.go finds them the same way (JavaFlags).
JDK_INC        := $(dir $(firstword $(wildcard /usr/lib/jvm/default-java/include/jvmti.h /usr/lib/jvm/*/include/jvmti.h)))
PRELOAD_JAVA   := $(if $(JDK_INC),-DER_JVMTI -I$(JDK_INC) -I$(JDK_INC)linux)
FUZZTIME ?= 5s
SOAK     ?= 10m

PREFIX  ?= /usr/local
DESTDIR ?=

.PHONY: all build test unit fuzz browser demo bench bench-scale clean vet soak man install

all: build

build: $(BIN)/libercollector.so
	$(GO) build $(GOFLAGS) -o $(BIN)/er ./cmd/er
	@for l in $(LINKS); do ln -sf er $(BIN)/$$l; done

# The man pages, from the commands' own help (er man).
man: build
	$(BIN)/er man $(BIN)/man

# PREFIX/bin/er with its classic names, PREFIX/lib/er/libercollector.so (where er looks for it), the
# collector API's header (PREFIX/include/er/collectorAPI.h), the man pages, and the bash and zsh
# completions.
install: build man
	install -D -m 755 $(BIN)/er $(DESTDIR)$(PREFIX)/bin/er
	@for l in $(LINKS); do ln -sf er $(DESTDIR)$(PREFIX)/bin/$$l; done
	install -D -m 644 $(BIN)/libercollector.so $(DESTDIR)$(PREFIX)/lib/er/libercollector.so
	install -D -m 644 preload/include/collectorAPI.h $(DESTDIR)$(PREFIX)/include/er/collectorAPI.h
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 644 $(BIN)/man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions
	$(BIN)/er completion bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/er
	$(BIN)/er completion zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_er

# The collector library that er collect preloads into the target for tracing.
$(BIN)/libercollector.so: $(PRELOAD_SRCS) $(wildcard preload/c/*.h)
	@mkdir -p $(BIN)
	$(CC) $(PRELOAD_CFLAGS) $(PRELOAD_JAVA) -o $@ $(PRELOAD_SRCS) $(PRELOAD_LIBS)

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...
	cd browsertests && $(GO) vet ./...

# -p 1: one package at a time. The end-to-end tests measure a target's CPU time while the collector runs
# beside it; other packages' tests on the same two cores would delay the collector's reading of the samples.
# -timeout 45m: cmd/er's end-to-end tests take about 6 minutes on an idle 2-CPU machine and more than go
# test's default 10 minutes beside two CPU hogs (a fresh clone at load averages of 10 to 16 was killed at
# 10m0s in TestSelectThreads, every test until then green).
unit: build
	$(GO) test -race -count=1 -p 1 -timeout 45m ./...

# Each fuzz target runs briefly: a regression check on the seed corpus plus a short exploration.
fuzz:
	FUZZTIME=$(FUZZTIME) GO=$(GO) ./scripts/fuzz.sh

# The Analyzer's page in a real headless Chromium (browsertests/ is a module of its own: chromedp).
# ER_BROWSER_TESTS=1: a missing Chromium fails the tests instead of skipping them.
browser: build
	cd browsertests && ER_BROWSER_TESTS=1 $(GO) test -count=1 ./...

test: vet unit fuzz browser

demo: build
	./scripts/demo.sh

# The fault-injection suite at length: random scenarios (full disk, er killed, descriptor and signal
# games, thread and process storms) with random seeds for $(SOAK); make test runs each once.
soak: build
	ER_SOAK=$(SOAK) $(GO) test -count=1 -run '^TestFaultSoak$$' -timeout 0 -v ./cmd/er

bench: build
	$(GO) test -run '^$$' -bench . -benchtime 1x -count 1 ./...

# Issue 13's scale figures on a real 10 kHz profile of testdata/callgraph.c (some 600,000 samples): er print, the
# Analyzer and, when installed, perf report; it records for two minutes and runs for several.
bench-scale: build
	ER_SCALE_BENCH=1 $(GO) test -run '^$$' -bench '^BenchmarkRealProfile$$' -benchtime 1x -count 1 -timeout 60m -v ./cmd/er

clean:
	rm -rf $(BIN)
