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
