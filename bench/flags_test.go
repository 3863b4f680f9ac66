package main

import (
	"io"
	"slices"
	"strings"
	"testing"
)

// TestVariantNames checks that every variant has the name -variants and
// the ratios know it by, in report order.
func TestVariantNames(t *testing.T) {
	var got []string
	for _, v := range concurrencyVariants(config{}, extBins{}) {
		got = append(got, v.name)
	}
	if !slices.Equal(got, variantNames) {
		t.Errorf("variants %v, want %v", got, variantNames)
	}
	for _, pair := range ratioPairs {
		for _, name := range pair {
			if !slices.Contains(variantNames, name) {
				t.Errorf("ratio %v names unknown variant %q", pair, name)
			}
		}
	}
}

func TestVariantsFlag(t *testing.T) {
	base := []string{"-git", "/bin/sh", "-refretry", "/bin/sh"}
	cfg, err := parseFlags(append(base, "-variants", "flock, go-empty"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.wantsVariant("flock") || !cfg.wantsVariant("go-empty") || cfg.wantsVariant("refretry") {
		t.Errorf("-variants flock,go-empty selected %v", cfg.variants)
	}
	if all, err := parseFlags(base, io.Discard); err != nil || !all.wantsVariant("coalesce-files") {
		t.Errorf("default should select every variant (err %v)", err)
	}
	if _, err := parseFlags(append(base, "-variants", "git-files,nope"), io.Discard); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown variant: err = %v", err)
	}
}

func TestSingleExtraFlag(t *testing.T) {
	var l extraList
	for _, s := range []string{"cgo=/bin/sh", "other = /bin/true"} {
		if err := l.Set(s); err != nil {
			t.Fatalf("Set(%q): %v", s, err)
		}
	}
	if len(l) != 2 || l[0] != (extraBin{"cgo", "/bin/sh"}) || l[1] != (extraBin{"other", "/bin/true"}) {
		t.Errorf("parsed %v", l)
	}
	for _, bad := range []string{"cgo=/bin/ls", "noequals", "=/bin/sh", "x=", "refretry=/bin/sh"} {
		if err := l.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
}

// TestConcurrencyExtraFlag: a -concurrency-extra binary runs as a variant of its
// own beside every selected one, with its ratios; its label may not be a variant's.
func TestConcurrencyExtraFlag(t *testing.T) {
	base := []string{"-git", "/bin/sh", "-refretry", "/bin/sh"}
	cfg, err := parseFlags(append(base, "-variants", "flock,refretry", "-concurrency-extra", "before=/bin/true"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range selectedVariants(cfg, extBins{}) {
		got = append(got, v.name)
	}
	if want := []string{"flock", "refretry", "before"}; !slices.Equal(got, want) {
		t.Errorf("variants %v, want %v", got, want)
	}
	if argv := selectedVariants(cfg, extBins{})[2].argv("/repo", "refs/heads/w/1", "abc"); argv[0] != "/bin/true" {
		t.Errorf("the extra runs %v", argv)
	}
	if _, err := parseFlags(append(base, "-concurrency-extra", "flock=/bin/true"), io.Discard); err == nil {
		t.Error("-concurrency-extra with a variant's name as its label was accepted")
	}
}

func TestMemberRunsFlag(t *testing.T) {
	base := []string{"-git", "/bin/sh", "-refretry", "/bin/sh"}
	if _, err := parseFlags(append(base, "-member-runs", "1"), io.Discard); err == nil {
		t.Error("-member-runs 1 accepted: a round's first invocation leads, so it measures no member")
	}
	if cfg, err := parseFlags(append(base, "-quick"), io.Discard); err != nil || cfg.memberRuns < 2 {
		t.Errorf("-quick: member-runs %d, err %v", cfg.memberRuns, err)
	}
}
