# uploadd — build, run, test, install.
#   make run       install build dependencies, build, run the daemon in the foreground
#   make test      install test dependencies, build, start the test servers, run every test,
#                  then the benchmark suite at tiny sizes; ends every process it started and
#                  lists every skipped test
#   make unit      build and run the unit tests only (a minute; no servers, no daemons)
#   make lint      the code's layout, the man pages, and (where installed) what repeats itself
#   make bench     run the benchmark suite against curl, rclone, aws-cli, tuspy (BENCH_FLAGS=--quick)
#   make install   put binaries, user units, man pages and shell completions under ~/.local
#                  (PREFIX/DESTDIR for packagers)

PREFIX ?= $(HOME)/.local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
DOCDIR ?= $(PREFIX)/share/doc/uploadd
MANDIR ?= $(PREFIX)/share/man
# Where bash-completion, zsh and fish look (bash-completion and fish also under ~/.local/share;
# zsh needs `fpath+=(~/.local/share/zsh/site-functions)` for a personal install).
BASHCOMPLETIONDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPLETIONDIR ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPLETIONDIR ?= $(PREFIX)/share/fish/vendor_completions.d
# User units: ~/.config/systemd/user for a personal install, /usr/lib/systemd/user for packages.
ifeq ($(PREFIX),$(HOME)/.local)
USERUNITDIR ?= $(HOME)/.config/systemd/user
else
USERUNITDIR ?= $(PREFIX)/lib/systemd/user
endif
SWIFT ?= swift
SWIFT_BUILD_FLAGS ?=
SERVERS = python3 contrib/test/servers.py
MAN_PAGES = contrib/man/uploadctl.1 contrib/man/uploadd.8 contrib/man/uploadd.conf.5

.PHONY: all build release run test test-steps test-servers stop-test-servers install uninstall clean deps test-deps bench \
	unit lint

all: build

deps:
	contrib/scripts/install-deps

test-deps:
	contrib/scripts/install-deps --test

build:
	$(SWIFT) build $(SWIFT_BUILD_FLAGS)

# The Swift runtime and Foundation linked in: idle RSS 24 MiB instead of 30 (only the pages used
# are read in) and `uploadctl status` in 3.4 ms instead of 6.8 (no dynamic linking of the Swift
# libraries), for a 75 MB binary (ICU's data is inside).
RELEASE_FLAGS ?= --static-swift-stdlib

release:
	$(SWIFT) build -c release $(RELEASE_FLAGS) $(SWIFT_BUILD_FLAGS)

run: deps release
	@echo "uploadd starting; in another terminal: $$(pwd)/.build/release/uploadctl add FILE --to file:///tmp/uploads/"
	.build/release/uploadd

# Unit tests first, on their own: the integration tests block test threads while they wait for
# real processes, which would starve the unit tests' actors on a 2-core machine.
UNIT_TESTS = UploadWireTests|UploadCoreTests|UploadDaemonTests|UploadControlTests
# The integration suites (a swift test --filter); `make test INTEGRATION_TESTS=TusTests` runs one.
INTEGRATION_TESTS = IntegrationTests
# The release build with AddressSanitizer, and the suites and tests its run leaves out (a --skip
# regex): FullDiskTests' and MessagesTests' image tests run the helper under its memory limit too.
ASAN_BUILD = .build/asan
ASAN_LEFT_OUT = ImagePreparationTests|LongLifeTests|HostileClientTests|SystemdTests|aFullCacheWhilePreparingAnImage|aKeptFormatThatComesOutLargerSendsTheOriginal
# Seconds of libFuzzer per target (journal, control requests, config, server answers) in every
# test run; a target that runs fewer than FUZZ_MIN_RUNS (1000) inputs fails.
FUZZ_SECONDS ?= 20

# Where the steps leave Swift Testing's event streams (*.jsonl) and the Python tests' verbose logs
# (*.log), from which the run's closing lines list every skipped test with its reason.
TEST_REPORTS = .build/test-reports
# Runs $(1), its output shown and copied to $(2); exits with its status (kept in $(2).status).
define logged
($(1) 2>&1; echo $$? > $(2).status) | tee $(2); exit $$(cat $(2).status)
endef

# A Python unittest run (verbose), logged to $(TEST_REPORTS)/NAME.log (run-contained lists its skips).
python_tests = $(call logged,$(1),$(TEST_REPORTS)/$(2).log)

# A swift test run of the tests $(1) matches: its event stream in $(TEST_REPORTS)/NAME.jsonl, its
# output logged to $(TEST_REPORTS)/NAME.out (run-contained repeats a crash report from there at the
# end of a failed run).
swift_tests = $(call logged,$(SWIFT) test --skip-build $(SWIFT_BUILD_FLAGS) --filter $(1) \
	--experimental-event-stream-output $(TEST_REPORTS)/$(2).jsonl,$(TEST_REPORTS)/$(2).out)

# The steps run under contrib/test/run-contained: whatever fails, and on Ctrl-C, every process
# they started (servers, daemons, a systemd namespace) is ended when they stop, and the wrapper
# says which ones it had to end. CI (.ci/run) sets UPLOADD_REQUIRE_PRIVILEGED=1, which makes the
# tests that need root, mounts or namespaces fail where they would otherwise skip.
test:
	contrib/test/run-contained --reports $(TEST_REPORTS) -- $(MAKE) --no-print-directory test-steps

# Warnings in uploadd's own code are errors in the test build (Package.swift reads it): a warning
# left in is one nobody reads again.
export UPLOADD_WARNINGS_AS_ERRORS = 1

# The code's layout, as .swift-format has it (`swift format -i -r Sources Tests` fixes it), and the
# man pages as mandoc and groff read them: all must have nothing to say. `duplicates` (a review
# tool, not a Debian package) lists code written twice, where it is installed.
lint:
	$(SWIFT) format lint --strict -r Sources Tests Package.swift
	mandoc -T lint -W warning $(MAN_PAGES)
	for page in $(MAN_PAGES); do out=$$(groff -ww -man -z $$page 2>&1); [ -z "$$out" ] || { echo "$$page: $$out"; exit 1; }; done
	@if command -v duplicates >/dev/null; then duplicates --most 20; else echo "duplicates not installed: skipped"; fi

# The unit tests alone: no servers, no daemons, no root.
unit:
	$(SWIFT) build --build-tests $(SWIFT_BUILD_FLAGS)
	$(SWIFT) test --skip-build $(SWIFT_BUILD_FLAGS) --filter '$(UNIT_TESTS)'

test-steps: test-deps
	mkdir -p $(TEST_REPORTS)
	# The code's layout, as .swift-format has it (`swift format -i -r Sources Tests` fixes it).
	$(SWIFT) format lint --strict -r Sources Tests Package.swift
	# The man pages, as mandoc and groff read them: both must have nothing to say.
	mandoc -T lint -W warning $(MAN_PAGES)
	for page in $(MAN_PAGES); do out=$$(groff -ww -man -z $$page 2>&1); [ -z "$$out" ] || { echo "$$page: $$out"; exit 1; }; done
	$(SWIFT) build --build-tests $(SWIFT_BUILD_FLAGS)
	$(call swift_tests,'$(UNIT_TESTS)',unit-tests)
	contrib/scripts/fuzz -t $(FUZZ_SECONDS)
	# The Python test tools' own tests: the reference receiver, the lossy file system, the scripted HTTP server.
	$(call python_tests,python3 -m unittest -v contrib/receiver/test_receiver.py,receiver)
	$(call python_tests,python3 contrib/test/test_lossyfs.py -v,lossyfs)
	$(call python_tests,python3 contrib/test/test_scripted_http.py -v,scripted-http)
	# For integrating apps: the Python client's tests, against real daemons (.build/debug).
	$(call python_tests,python3 contrib/python/test_uploadd_client.py -v,python-client)
	# Every example of contrib/PROTOCOL.md, replayed against real daemons: the reference cannot drift.
	python3 contrib/test/replay_protocol_examples.py
	$(SERVERS) start
	($(call swift_tests,'$(INTEGRATION_TESTS)',integration-tests)); status=$$?; $(SERVERS) stop; exit $$status
	# The integration suites again, against uploadd, uploadctl and uploadd-image built as users run
	# them (release) with AddressSanitizer: a use after free or an overflow that happens to do no
	# harm in one run (the optimizer once freed a job's fields before they were journaled) ends
	# this one with the sanitizer's report, in $(TEST_REPORTS)/asan. Left out: the suites that
	# measure memory or run the image helper under a memory limit (the sanitizer's shadow memory
	# is terabytes of address space), and systemd's, which checks which file was executed.
	$(SWIFT) build -c release --sanitize=address --scratch-path $(ASAN_BUILD) $(SWIFT_BUILD_FLAGS)
	rm -rf $(TEST_REPORTS)/asan && mkdir -p $(TEST_REPORTS)/asan
	$(SERVERS) start
	# A crash there is reported by the sanitizer, with its stack (a trap is SIGILL, a fault SIGSEGV),
	# not by Swift's backtracer, whose reading of the crashed stack trips the sanitizer itself and
	# leaves a report of its own reading instead of the crash's. Reports are named
	# report.PROGRAM.PID. The sanitizer creates a report's file just before it writes the first
	# line: a file left empty holds no report (once in CI, a process the tests killed at that
	# moment), so it is named, and only a report with something in it fails the run.
	(export UPLOADD_BIN_DIR=$(CURDIR)/$(ASAN_BUILD)/release SWIFT_BACKTRACE=enable=no \
		ASAN_OPTIONS=detect_leaks=0:handle_sigill=1:handle_abort=1:log_exe_name=1:log_path=$(CURDIR)/$(TEST_REPORTS)/asan/report; \
		$(call swift_tests,'$(INTEGRATION_TESTS)' --skip '$(ASAN_LEFT_OUT)',asan-integration-tests)); \
		status=$$?; $(SERVERS) stop; exit $$status
	@for report in $$(find $(TEST_REPORTS)/asan -name 'report.*' -empty); do \
		echo "warning: $$report is empty: its process ended before the sanitizer wrote anything"; done
	@if [ -n "$$(find $(TEST_REPORTS)/asan -name 'report.*' ! -empty)" ]; then \
		echo "AddressSanitizer reported errors: $(TEST_REPORTS)/asan"; exit 1; fi
	# The benchmark suite at tiny sizes (a release build, every peer, ~30 s): it must keep running,
	# and it fails when an upload of uploadd's fails or stores the wrong number of bytes.
	python3 contrib/bench/run.py --quick --out .build/bench-quick/RESULTS.md

test-servers:
	$(SERVERS) start

# The benchmark suite (contrib/bench/README.md): `make bench BENCH_FLAGS=--quick` for a smoke run.
# --strict: a missed target fails the run too.
bench:
	python3 contrib/bench/run.py --strict $(BENCH_FLAGS)

stop-test-servers:
	$(SERVERS) stop

install: release
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(USERUNITDIR) $(DESTDIR)$(DOCDIR)
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8
	install -d $(DESTDIR)$(BASHCOMPLETIONDIR) $(DESTDIR)$(ZSHCOMPLETIONDIR) $(DESTDIR)$(FISHCOMPLETIONDIR)
	install -m 0755 .build/release/uploadd .build/release/uploadctl .build/release/uploadd-image $(DESTDIR)$(BINDIR)/
	for unit in uploadd.service uploadd.socket; do \
		sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@DOCDIR@|$(DOCDIR)|g' systemd/$$unit > $(DESTDIR)$(USERUNITDIR)/$$unit; \
		chmod 0644 $(DESTDIR)$(USERUNITDIR)/$$unit; \
	done
	install -m 0644 README.md $(DESTDIR)$(DOCDIR)/
	install -m 0644 contrib/man/uploadctl.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 contrib/man/uploadd.conf.5 $(DESTDIR)$(MANDIR)/man5/
	install -m 0644 contrib/man/uploadd.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 0644 contrib/completions/uploadctl.bash $(DESTDIR)$(BASHCOMPLETIONDIR)/uploadctl
	install -m 0644 contrib/completions/_uploadctl $(DESTDIR)$(ZSHCOMPLETIONDIR)/_uploadctl
	install -m 0644 contrib/completions/uploadctl.fish $(DESTDIR)$(FISHCOMPLETIONDIR)/uploadctl.fish
	@echo "installed; now: systemctl --user daemon-reload && systemctl --user enable --now uploadd.socket"

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/uploadd $(DESTDIR)$(BINDIR)/uploadctl $(DESTDIR)$(BINDIR)/uploadd-image
	rm -f $(DESTDIR)$(USERUNITDIR)/uploadd.service $(DESTDIR)$(USERUNITDIR)/uploadd.socket
	rm -rf $(DESTDIR)$(DOCDIR)
	rm -f $(DESTDIR)$(MANDIR)/man1/uploadctl.1 $(DESTDIR)$(MANDIR)/man5/uploadd.conf.5 $(DESTDIR)$(MANDIR)/man8/uploadd.8
	rm -f $(DESTDIR)$(BASHCOMPLETIONDIR)/uploadctl $(DESTDIR)$(ZSHCOMPLETIONDIR)/_uploadctl
	rm -f $(DESTDIR)$(FISHCOMPLETIONDIR)/uploadctl.fish

clean:
	$(SWIFT) package clean
	rm -rf .build/itest .build/test-servers
