package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/platform"
)

// Signer is a throwaway signing key for tests of signed commits, in one of git's
// signature formats: "ssh" (a key file, ssh-keygen) or "openpgp" (a GnuPG home of its
// own). Config is what a job sets to sign every commit with it, as a CI bot does;
// VerifyHook is a pre-receive hook that refuses every new commit whose signature git
// verify-commit does not accept, as a forge's signed-commits rule does.
type Signer struct {
	Format string
	// Key is what user.signingKey names: the private key's file (ssh), or the key's
	// fingerprint (openpgp).
	Key string
	// Home is the GnuPG home holding the key (openpgp; "" for ssh): GNUPGHOME.
	Home string
	// Allowed is an allowed-signers file naming the key (ssh; "" for openpgp): what
	// gpg.ssh.allowedSignersFile names for git verify-commit.
	Allowed string
}

// SignFormats are the signature formats NewSigner makes keys for.
var SignFormats = []string{"ssh", "openpgp"}

// NewSigner makes a key in format, for one test: an SSH key made with ssh-keygen, or an
// OpenPGP key made with gpg in a GnuPG home of the test's own (its gpg-agent is
// stopped when the test ends). A tool it needs that is missing
// fails the test: scripts/test.sh installs gnupg and openssh-client.
func NewSigner(t testing.TB, format string) Signer {
	t.Helper()
	switch format {
	case "ssh":
		dir := t.TempDir()
		s := Signer{Format: format, Key: filepath.Join(dir, "key"), Allowed: filepath.Join(dir, "allowed-signers")}
		run(t, "", nil, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "refretry-test", "-f", s.Key)
		pub, err := os.ReadFile(s.Key + ".pub")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(s.Allowed, append([]byte("* "), pub...), 0o644); err != nil {
			t.Fatal(err)
		}
		return s
	case "openpgp":
		home, fingerprint := newGPGKey(t)
		return Signer{Format: format, Key: fingerprint, Home: home}
	}
	t.Fatalf("testutil.NewSigner: no format %q", format)
	return Signer{}
}

// Config is the git config that signs every commit with the key, as git commit does:
// commit.gpgSign, gpg.format and user.signingKey; and, for ssh,
// gpg.ssh.allowedSignersFile, so that git verify-commit in the same repository
// accepts the key.
func (s Signer) Config() [][2]string {
	c := [][2]string{{"commit.gpgSign", "true"}, {"gpg.format", s.Format}, {"user.signingKey", s.Key}}
	if s.Allowed != "" {
		c = append(c, [2]string{"gpg.ssh.allowedSignersFile", s.Allowed})
	}
	return c
}

// Env is the environment the key's programs need: GNUPGHOME for openpgp.
func (s Signer) Env() []string {
	if s.Home != "" {
		return []string{"GNUPGHOME=" + s.Home}
	}
	return nil
}

// ConfigArgs are Config as git's -c options.
func (s Signer) ConfigArgs() []string {
	var args []string
	for _, kv := range s.Config() {
		args = append(args, "-c", kv[0]+"="+kv[1])
	}
	return args
}

// Broken is what makes the key unusable for one job, as for a job whose key file was
// removed or whose GnuPG home holds no key: git config to set in its repository once
// its own commit is signed (ssh: user.signingKey naming a file that does not exist),
// and environment to add (openpgp: GNUPGHOME naming an empty home).
func (s Signer) Broken(t testing.TB) (config [][2]string, env []string) {
	t.Helper()
	if s.Format == "ssh" {
		return [][2]string{{"user.signingKey", filepath.Join(t.TempDir(), "removed-key")}}, nil
	}
	return nil, []string{"GNUPGHOME=" + shortTempDir(t, "gpg-empty")}
}

// VerifyHook is a pre-receive hook that refuses, with the words "is not signed by a
// trusted key", every commit a push brings to a ref under prefix ("" for every ref;
// "refs/heads/" for branches, as a forge's branch rules) that git verify-commit does
// not accept: for an updated ref the commits between its old and new value, for a
// new ref those no ref has yet. Deletions pass.
func (s Signer) VerifyHook(prefix string) string {
	var env string
	if s.Home != "" {
		env = "GNUPGHOME=" + platform.ShellQuote(s.Home) + "; export GNUPGHOME\n"
	}
	cfg := ""
	if s.Allowed != "" {
		cfg = "-c gpg.ssh.allowedSignersFile=" + platform.ShellQuote(s.Allowed)
	}
	return "#!/bin/sh\n" + env + `zero=$(git hash-object -t blob --stdin </dev/null | tr 0-9a-f 0)
while read old new ref; do
	[ "$new" = "$zero" ] && continue
	case "$ref" in ` + platform.ShellQuote(prefix) + `*) ;; *) continue ;; esac
	if [ "$old" = "$zero" ]; then range="$new --not --all"; else range="$old..$new"; fi
	for c in $(git rev-list $range); do
		if ! git ` + cfg + ` verify-commit "$c" >/dev/null 2>&1; then
			echo "error: commit $c on $ref is not signed by a trusted key" >&2
			exit 1
		fi
	done
done
`
}

// InstallVerifyHook writes VerifyHook(prefix) as the pre-receive hook of the bare
// repository at dir.
func (s Signer) InstallVerifyHook(t testing.TB, dir, prefix string) {
	t.Helper()
	hooks := filepath.Join(dir, "hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hooks, "pre-receive"), []byte(s.VerifyHook(prefix)), 0o755); err != nil {
		t.Fatal(err)
	}
}

// newGPGKey makes an Ed25519 signing key without a passphrase in a GnuPG home of the
// test's own, whose gpg-agent is stopped when the test ends, and returns the home and
// the key's fingerprint. The home has a short path: gpg-agent's socket lives in it,
// and a socket's path may not be longer than about 100 bytes.
func newGPGKey(t testing.TB) (home, fingerprint string) {
	t.Helper()
	home = shortTempDir(t, "gpg")
	t.Cleanup(func() { _ = exec.Command("gpgconf", "--homedir", home, "--kill", "gpg-agent").Run() })
	gpg := func(args ...string) string {
		return run(t, "", nil, "gpg", append([]string{"--homedir", home, "--batch"}, args...)...)
	}
	gpg("--passphrase", "", "--quick-gen-key", "refretry test <test@refretry.invalid>", "ed25519", "sign", "never")
	out := gpg("--with-colons", "--list-secret-keys")
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Split(line, ":"); len(f) > 9 && f[0] == "fpr" {
			return home, f[9]
		}
	}
	t.Fatalf("no fingerprint in gpg's listing:\n%s", out)
	return "", ""
}

// shortTempDir is a directory of mode 0700 under the system's temporary directory,
// removed when the test ends.
func shortTempDir(t testing.TB, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// run runs a program in dir with env added to this process's; a failure fails the
// test.
func run(t testing.TB, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
