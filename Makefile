# make soak: the model-checked soak (internal/harness/soak) against git 2.55 (reftable and
# files) and the system git 2.39 (files). It stops by itself after SOAK_SECONDS or
# SOAK_ROUNDS rounds, whichever comes first. SOAK_SEED replays a run (0: a new seed);
# the output says how to replay a single failing round. SOAK_FLAGS adds soak flags,
# e.g. SOAK_FLAGS=-coalesce runs half the one-ref invocations with --coalesce.
SOAK_SECONDS ?= 600
SOAK_ROUNDS ?= 100000
SOAK_SEED ?= 0
SOAK_FLAGS ?=
OLD_GIT ?= /usr/bin/git

.PHONY: soak
soak:
	@git55=$$(scripts/get-git.sh) || exit 1; \
	bin=$$(mktemp -d) || exit 1; \
	trap 'rm -rf "$$bin"' EXIT; \
	CGO_ENABLED=0 go build -o "$$bin/refretry" . && \
	go run ./internal/harness/soak -seconds $(SOAK_SECONDS) -rounds $(SOAK_ROUNDS) -seed $(SOAK_SEED) \
		-git "$$git55" -old-git $(OLD_GIT) -refretry "$$bin/refretry" $(SOAK_FLAGS)

# make git-suite: git's own tests of update-ref, fetch and push (t1400, t1404, t5510, t5516, …), run
# with refretry's git shim in front of git 2.55 on both ref backends (scripts/git-suite.sh;
# about 25 minutes). GIT_SUITE_TESTS picks other test scripts.
GIT_SUITE_TESTS ?=

.PHONY: git-suite
git-suite:
	scripts/git-suite.sh $(GIT_SUITE_TESTS)
