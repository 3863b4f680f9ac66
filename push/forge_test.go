package push

import (
	"github.com/refretry/refretry/failure"
	"strings"
	"testing"
)

// Transcribed, not captured: what GitHub and GitLab print when a push loses a race or
// meets a rule, as users reported it in public issue threads (../shared/docs/forges.md
// §1 names them; the thread is given with each case). These forges cannot run here; the
// same answers are produced end to end by internal/harness/gitserver's front ends. Gitea's were
// captured from a real Gitea 1.26 (forges.md §4) and are also tested against one.
const (
	oidX  = "58c1cf2b6e0d5a4b3c2d1e0f9a8b7c6d5e4f3a2b"
	oidY  = "8bb6dea5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9"
	ghURL = "https://github.com/o/r"
)

// workflowTimeout is GitHub's reason when its check for workflow changes timed out.
const workflowTimeout = "Unable to determine if workflow can be created or updated due to timeout; `workflows` scope may be required."

// bypassNotice is what GitHub prints before the answer to an actor who may bypass
// the rule that main changes through pull requests (akuity/kargo#3071,
// kernelkit/infix#1610: an empty remote: line around the rule).
var bypassNotice = "remote: Bypassed rule violations for refs/heads/main:" + pad + "\n" + "remote: \n" +
	"remote: - Changes must be made through a pull request." + pad + "\n" + "remote: \n"

func ghPorcelain(lines ...string) string {
	return "To " + ghURL + "\n" + strings.Join(lines, "\n") + "\nDone\n"
}

func TestClassifyForges(t *testing.T) {
	t.Parallel()
	ghFailed := "error: failed to push some refs to '" + ghURL + "'\n"
	tests := []struct {
		name           string
		stdout, stderr string
		want           failure.Class
		wantMoved      *failure.Moved
		wantPolicy     []string
		wantAdvice     string // a part of refretry's line; "" for no line
	}{
		{
			// lionagi#1395, deepagents#3042, argo-cd#27835: no remote: error line.
			name:   "GitHub lost compare-and-swap",
			stdout: ghPorcelain("!\trefs/heads/main:refs/heads/main\t[remote rejected] (cannot lock ref 'refs/heads/main': is at " + oidX + " but expected " + oidY + ")"),
			stderr: ghFailed, want: failure.Behind,
			wantMoved: &failure.Moved{Ref: "refs/heads/main", Actual: oidX, Expected: oidY},
		},
		{
			// fern#15268: a concurrent creation of the same ref.
			name:   "GitHub ref created meanwhile",
			stdout: ghPorcelain("!\trefs/tags/v1:refs/tags/v1\t[remote rejected] (cannot lock ref 'refs/tags/v1': reference already exists)"),
			stderr: ghFailed, want: failure.Race,
		},
		{
			name:   "GitHub ref deleted meanwhile",
			stdout: ghPorcelain("!\trefs/heads/f:refs/heads/f\t[remote rejected] (cannot lock ref 'refs/heads/f': unable to resolve reference 'refs/heads/f')"),
			stderr: ghFailed, want: failure.Race,
		},
		{
			// w3c/webref#54, contile#196.
			name:   "GitHub directory/file conflict",
			stdout: ghPorcelain("!\trefs/heads/a/b:refs/heads/a/b\t[remote rejected] (cannot lock ref 'refs/heads/a/b': 'refs/heads/a' exists; cannot create 'refs/heads/a/b')"),
			stderr: ghFailed, want: failure.Rejected,
		},
		{
			// objectstack#2195, microsoft/vscode#182679, rickstaa/action-create-tag#9.
			name:   "GitHub commit_refs failure",
			stdout: ghPorcelain("!\trefs/tags/v1:refs/tags/v1\t[remote rejected] (failure)"),
			stderr: "remote: fatal error in commit_refs" + pad + "\n" + ghFailed, want: failure.Unknown,
		},
		{
			name:   "a bare (failure) without commit_refs is not known",
			stdout: ghPorcelain("!\trefs/tags/v1:refs/tags/v1\t[remote rejected] (failure)"),
			stderr: ghFailed, want: failure.Other,
		},
		{
			// ship-studio#678.
			name:   "GitHub 500 in the ref phase",
			stdout: ghPorcelain("!\trefs/heads/main:refs/heads/main\t[remote rejected] (Internal Server Error)"),
			stderr: "remote: Internal Server Error" + pad + "\n" + ghFailed, want: failure.Unknown,
		},
		{
			// Seen from git 2.55's receive-pack behind git http-backend, 16 pushes to 16
			// new branches at once (the matrix benchmark's floor): a server-side failure
			// before any ref was updated.
			name:   "objects not migrated out of quarantine",
			stdout: ghPorcelain("!\tHEAD:refs/heads/job-006\t[remote rejected] (unable to migrate objects to permanent storage)"),
			stderr: ghFailed, want: failure.Unknown,
		},
		{
			// Captured from git 2.55's receive-pack (files backend) over file://, while
			// another process deleted 100 of the remote's loose refs: its connectivity
			// check died on one of them, before any ref was updated.
			name:   "a server ref deleted under the connectivity check",
			stdout: "To /tmp/race/rem6\n!\tHEAD:refs/heads/main\t[remote rejected] (missing necessary objects)\nDone\n",
			stderr: "remote: fatal: bad object refs/soak/delete/32        \nfatal: bad object refs/soak/delete/42\n" +
				"error: failed to push some refs to '/tmp/race/rem6'\n",
			want: failure.Unknown,
		},
		{
			// The same reason from a push that lacks objects (a shallow clone's), with
			// no bad ref on the server: final.
			name:   "missing objects without a deleted ref",
			stdout: ghPorcelain("!\trefs/heads/main:refs/heads/main\t[remote rejected] (missing necessary objects)"),
			stderr: ghFailed, want: failure.Other,
		},
		{
			// SageMathOER-CCC/sage-discrete-math#84.
			name:   "GitHub GH006",
			stdout: ghPorcelain("!\trefs/heads/main:refs/heads/main\t[remote rejected] (protected branch hook declined)"),
			stderr: "remote: error: GH006: Protected branch update failed for refs/heads/main." + pad + "\n" +
				"remote: error: Changes must be made through a pull request." + pad + "\n" + ghFailed,
			want:       failure.Declined,
			wantPolicy: []string{"GH006: Protected branch update failed for refs/heads/main.", "Changes must be made through a pull request."},
		},
		{
			// henne49/dbus-opendtu#235, Women-Devs-SG/bibsnbub#35.
			name:   "GitHub GH013",
			stdout: ghPorcelain("!\trefs/heads/main:refs/heads/main\t[remote rejected] (push declined due to repository rule violations)"),
			stderr: "remote: Resolving deltas: 100% (1/1), completed with 1 local object." + pad + "\n" +
				"remote: error: GH013: Repository rule violations found for refs/heads/main." + pad + "\n" +
				"remote: Review all repository rules at https://github.com/o/r/rules?ref=refs%2Fheads%2Fmain" + pad + "\n" +
				"remote: \n" +
				"remote: - Changes must be made through a pull request." + pad + "\n" +
				"remote: \n" + ghFailed,
			want: failure.Declined,
			wantPolicy: []string{"GH013: Repository rule violations found for refs/heads/main.",
				"Review all repository rules at https://github.com/o/r/rules?ref=refs%2Fheads%2Fmain",
				"- Changes must be made through a pull request."},
		},
		{
			// forges.md §1 (gh-aw#29301 and the signed-commit rule's reports): GH013's
			// rule for signatures, followed by the commits it refused. Final, with a hint
			// about signing.
			name:   "GitHub GH013 signed commits",
			stdout: ghPorcelain("!\trefs/heads/main:refs/heads/main\t[remote rejected] (push declined due to repository rule violations)"),
			stderr: "remote: error: GH013: Repository rule violations found for refs/heads/main." + pad + "\n" +
				"remote: Review all repository rules at https://github.com/o/r/rules?ref=refs%2Fheads%2Fmain" + pad + "\n" +
				"remote: \n" +
				"remote: - Commits must have verified signatures." + pad + "\n" +
				"remote:   Found 1 violation:" + pad + "\n" +
				"remote: \n" +
				"remote:   " + oidX + pad + "\n" +
				"remote: \n" + ghFailed,
			want: failure.Declined,
			wantPolicy: []string{"GH013: Repository rule violations found for refs/heads/main.",
				"Review all repository rules at https://github.com/o/r/rules?ref=refs%2Fheads%2Fmain",
				"- Commits must have verified signatures.", "Found 1 violation:", oidX},
			wantAdvice: "the remote wants signed commits",
		},
		{
			// https://github.com/cli/cli/issues/13635 (a GitHub App token that holds
			// workflows: write; a re-run succeeded) and
			// https://github.com/aptos-labs/aptos-core/pull/17930 (a new branch, pushed
			// with --force-with-lease): no remote: line.
			name:   "GitHub workflow check timed out",
			stdout: ghPorcelain("!\trefs/heads/update-version:refs/heads/update-version\t[remote rejected] (" + workflowTimeout + ")"),
			stderr: ghFailed, want: failure.Unknown,
		},
		{
			// https://github.com/stablyai/orca/pull/19550: every push of a new tag, in a
			// repository of 26,253 refs.
			name:   "GitHub workflow check timed out on a new tag",
			stdout: ghPorcelain("!\trefs/tags/v1.4.198:refs/tags/v1.4.198\t[remote rejected] (" + workflowTimeout + ")"),
			stderr: ghFailed, want: failure.Unknown,
		},
		{
			// https://github.com/tenstorrent/tt-metal/issues/32354 prints it without the
			// backticks.
			name: "GitHub workflow check timed out, without backticks",
			stdout: ghPorcelain("!\trefs/heads/mirror/x:refs/heads/mirror/x\t[remote rejected] (Unable to determine if workflow can be " +
				"created or updated due to timeout; workflows scope may be required.)"),
			stderr: ghFailed, want: failure.Unknown,
		},
		{
			// https://github.com/repo-sync/github-sync/issues/23,
			// https://github.com/cpp-linter/cpp-linter-action/issues/318: no remote: line.
			name: "GitHub App without the workflows permission",
			stdout: ghPorcelain("!\trefs/heads/main:refs/heads/main\t[remote rejected] (refusing to allow a GitHub App to create or " +
				"update workflow `.github/workflows/dlc.yml` without `workflows` permission)"),
			stderr: ghFailed, want: failure.Declined, wantAdvice: "create or change a workflow file, so refretry did not retry",
		},
		{
			// https://github.com/desktop/desktop/issues/17409 (after a remote:
			// Resolving deltas line), https://github.com/cli/cli/issues/5355.
			name: "personal access token without the workflow scope",
			stdout: ghPorcelain("!\trefs/heads/master:refs/heads/master\t[remote rejected] (refusing to allow a Personal Access Token " +
				"to create or update workflow `.github/workflows/gh-pages.yml` without `workflow` scope)"),
			stderr:     "remote: Resolving deltas: 100% (11/11), completed with 6 local objects." + pad + "\n" + ghFailed,
			want:       failure.Declined,
			wantAdvice: "create or change a workflow file, so refretry did not retry",
		},
		{
			// https://github.com/akuity/kargo/issues/3071: an actor who may bypass the
			// rules loses a race; the notice comes first, the reason is the lost
			// compare-and-swap.
			name:   "GitHub lost compare-and-swap after a bypass notice",
			stdout: ghPorcelain("!\trefs/heads/main:refs/heads/main\t[remote rejected] (cannot lock ref 'refs/heads/main': is at " + oidX + " but expected " + oidY + ")"),
			stderr: bypassNotice + ghFailed, want: failure.Behind,
			wantMoved: &failure.Moved{Ref: "refs/heads/main", Actual: oidX, Expected: oidY},
		},
		{
			// Composed, not transcribed: the same notice before git's own receive-pack
			// words for a lost race (as Gitea's, below): its list item is not a rule
			// that refused anything.
			name:   "git's lost race after a bypass notice",
			stdout: ghPorcelain("!\trefs/heads/main:refs/heads/main\t[remote rejected] (failed to update ref)"),
			stderr: bypassNotice + "remote: error: cannot lock ref 'refs/heads/main': is at " + oidX + " but expected " + oidY + pad + "\n" + ghFailed,
			want:   failure.Behind, wantMoved: &failure.Moved{Ref: "refs/heads/main", Actual: oidX, Expected: oidY},
		},
		{
			// akuity/kargo#5286: Gitaly's compare-and-swap failed, no remote: line.
			name:   "GitLab lost compare-and-swap",
			stdout: ghPorcelain("!\trefs/heads/main:refs/heads/main\t[remote rejected] (incorrect old value provided)"),
			stderr: ghFailed, want: failure.Behind,
			wantMoved: &failure.Moved{Ref: "refs/heads/main"},
		},
		{
			name:       "GitLab protected branch",
			stdout:     ghPorcelain("!\trefs/heads/main:refs/heads/main\t[remote rejected] (pre-receive hook declined)"),
			stderr:     "remote: GitLab: You are not allowed to push code to protected branches on this project." + pad + "\n" + ghFailed,
			want:       failure.Declined,
			wantPolicy: []string{"GitLab: You are not allowed to push code to protected branches on this project."},
		},
		{
			// Users' reports of GitLab's push rule "Reject unsigned commits" (its wording
			// before GitLab 16; later "Commit must be signed").
			name:       "GitLab unsigned commit",
			stdout:     ghPorcelain("!\trefs/heads/main:refs/heads/main\t[remote rejected] (pre-receive hook declined)"),
			stderr:     "remote: GitLab: Commit must be signed with a GPG key" + pad + "\n" + ghFailed,
			want:       failure.Declined,
			wantPolicy: []string{"GitLab: Commit must be signed with a GPG key"},
			wantAdvice: "the remote wants signed commits",
		},
		{
			// Composed from Gitea's pre-receive handler (code read, not captured): a
			// branch protected from unverified commits, in the shape of Gitea's other
			// refusals (below).
			name:   "Gitea unverified commit",
			stdout: ghPorcelain("!\trefs/heads/main:refs/heads/main\t[remote rejected] (pre-receive hook declined)"),
			stderr: "remote: \n" + "remote: error:" + pad + "\n" +
				"remote: error: Branch main is protected from unverified commit " + oidX + pad + "\n" +
				"remote: error:" + pad + "\n" + ghFailed,
			want:       failure.Declined,
			wantPolicy: []string{"Branch main is protected from unverified commit " + oidX},
			wantAdvice: "the remote wants signed commits",
		},
		{
			// Captured from Gitea 1.26 (forges.md §4): 1 winner of 16, a loser's output.
			name:   "Gitea lost race",
			stdout: ghPorcelain("!\trefs/heads/main:refs/heads/main\t[remote rejected] (incorrect old value provided)"),
			stderr: "remote: error: cannot lock ref 'refs/heads/main': is at " + oidX + " but expected " + oidY + pad + "\n" + ghFailed,
			want:   failure.Behind, wantMoved: &failure.Moved{Ref: "refs/heads/main", Actual: oidX, Expected: oidY},
		},
		{
			name:   "Gitea lost race, atomic",
			stdout: ghPorcelain("!\trefs/heads/main:refs/heads/main\t[remote rejected] (atomic transaction failed)"),
			stderr: "remote: error: cannot lock ref 'refs/heads/main': is at " + oidX + " but expected " + oidY + pad + "\n" + ghFailed,
			want:   failure.Behind, wantMoved: &failure.Moved{Ref: "refs/heads/main", Actual: oidX, Expected: oidY},
		},
		{
			name:   "Gitea ref lock held",
			stdout: ghPorcelain("!\tHEAD:refs/heads/lk\t[remote rejected] (reference already exists)"),
			stderr: "remote: error: cannot lock ref 'refs/heads/lk': Unable to create '/data/repos/u/r.git/./refs/heads/lk.lock': File exists." + pad + "\n" +
				"remote: \n" +
				"remote: Another git process seems to be running in this repository, or the lock file may be stale" + pad + "\n" + ghFailed,
			want: failure.LockContention,
		},
		{
			name:   "Gitea protected branch",
			stdout: ghPorcelain("!\trefs/heads/main:refs/heads/main\t[remote rejected] (pre-receive hook declined)"),
			stderr: "remote: \n" + "remote: error:" + pad + "\n" +
				"remote: error: Not allowed to push to protected branch main" + pad + "\n" +
				"remote: error:" + pad + "\n" + ghFailed,
			want:       failure.Declined,
			wantPolicy: []string{"Not allowed to push to protected branch main"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := Classify(1, []byte(tc.stdout), []byte(tc.stderr))
			if e == nil || e.Class != tc.want {
				t.Fatalf("Classify = %v, want %s", e, tc.want)
			}
			if tc.wantMoved != nil {
				if m := e.Moved; m == nil || *m != *tc.wantMoved {
					t.Errorf("Moved = %+v, want %+v", e.Moved, tc.wantMoved)
				}
			}
			if strings.Join(e.Policy, "|") != strings.Join(tc.wantPolicy, "|") {
				t.Errorf("Policy = %q, want %q", e.Policy, tc.wantPolicy)
			}
			if len(tc.wantPolicy) > 0 && !strings.Contains(e.Advice, tc.wantPolicy[len(tc.wantPolicy)-1]) {
				t.Errorf("Advice %q does not state the rule", e.Advice)
			}
			if tc.wantAdvice != "" && !strings.Contains(e.Advice, tc.wantAdvice) || len(tc.wantPolicy) == 0 && tc.wantAdvice == "" && e.Advice != "" {
				t.Errorf("Advice %q, want one with %q", e.Advice, tc.wantAdvice)
			}
			if got, want := e.Class.Retryable(), tc.want == failure.Race || tc.want == failure.Unknown || tc.want == failure.LockContention; got != want {
				t.Errorf("Retryable() = %v", got)
			}
		})
	}
}

// TestCreationAdvice: refretry's line about GitHub's workflow check names the refs it
// timed out on that the remote did not have, and only those.
func TestCreationAdvice(t *testing.T) {
	t.Parallel()
	timedOut := func(to string) RefStatus {
		return RefStatus{Flag: '!', From: "HEAD", To: to, Summary: "[remote rejected]", Reason: workflowTimeout}
	}
	tests := []struct {
		name   string
		refs   []RefStatus
		absent map[string]bool
		want   string
	}{
		{"a new branch", []RefStatus{timedOut("refs/heads/new")}, map[string]bool{"refs/heads/new": true},
			"timed out creating refs/heads/new, as it may on every new ref"},
		{"two new refs", []RefStatus{timedOut("refs/tags/v1"), timedOut("refs/tags/v2")},
			map[string]bool{"refs/tags/v1": true, "refs/tags/v2": true}, "creating refs/tags/v1 and 1 more new refs,"},
		{"an update", []RefStatus{timedOut("refs/heads/main")}, map[string]bool{}, ""},
		{"the remote not asked", []RefStatus{timedOut("refs/heads/new")}, nil, ""},
		{"another reason", []RefStatus{{Flag: '!', From: "HEAD", To: "refs/heads/new", Summary: "[remote rejected]", Reason: "failure"}},
			map[string]bool{"refs/heads/new": true}, ""},
		{"a deletion", []RefStatus{{Flag: '!', To: "refs/heads/old", Summary: "[remote rejected]", Reason: workflowTimeout}},
			map[string]bool{"refs/heads/old": true}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := creationAdvice(tc.refs, tc.absent)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("creationAdvice = %q, want one with %q", got, tc.want)
			}
			if got != "" && !strings.Contains(got, "push the commits to a ref that already exists first") {
				t.Errorf("creationAdvice = %q names no way round it", got)
			}
		})
	}
}

// TestSignatureRule: a rule's lines that refuse commits for their signatures, in the
// forges' words and a hook's, and lines that only look alike.
func TestSignatureRule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lines []string
		want  bool
	}{
		{[]string{"GH013: Repository rule violations found for refs/heads/main.", "- Commits must have verified signatures."}, true},
		{[]string{"GitLab: Commit must be signed with a GPG key"}, true},
		{[]string{"GitLab: Commit must be signed"}, true},
		{[]string{"Branch main is protected from unverified commit " + oidX}, true},
		{[]string{"error: commit " + oidX + " on refs/heads/main is not signed by a trusted key"}, true},
		{[]string{"rejecting UNSIGNED commits"}, true},
		{[]string{"GH013: Repository rule violations found for refs/heads/main.", "- Changes must be made through a pull request."}, false},
		{[]string{"Not allowed to push to protected branch main"}, false},
		{[]string{"this branch is designed for releases; the assigned reviewers must approve"}, false},
		{nil, false},
	} {
		if got := SignatureRule(tc.lines); got != tc.want {
			t.Errorf("SignatureRule(%q) = %v, want %v", tc.lines, got, tc.want)
		}
	}
}
