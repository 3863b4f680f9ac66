package releasetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// actionStep is a step of action.yml, as much as these tests read.
type actionStep struct {
	ID  string            `yaml:"id"`
	Run string            `yaml:"run"`
	Env map[string]string `yaml:"env"`
}

type actionFile struct {
	Inputs map[string]struct {
		Default string `yaml:"default"`
	} `yaml:"inputs"`
	Runs struct {
		Steps []actionStep `yaml:"steps"`
	} `yaml:"runs"`
}

func loadAction(t *testing.T) actionFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var a actionFile
	if err := yaml.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	return a
}

var inputExpr = regexp.MustCompile(`\$\{\{\s*inputs\.([\w-]+)\s*\}\}`)

// TestActionSetupInstallsRelease runs the Action's setup step as the runner would for
// `uses: refretry/refretry@<tag>` with the default inputs: it installs that release's
// archive (from the local server) and puts its directory on GITHUB_PATH.
func TestActionSetupInstallsRelease(t *testing.T) {
	rel := needRelease(t)
	url, hits := rel.serve(t, nil)
	a := loadAction(t)
	var setup *actionStep
	for i := range a.Runs.Steps {
		if a.Runs.Steps[i].ID == "setup" {
			setup = &a.Runs.Steps[i]
		}
	}
	if setup == nil {
		t.Fatal("action.yml has no setup step")
	}
	work := t.TempDir()
	actionPath := filepath.Join(work, "_actions", "refretry", "refretry", rel.tag)
	if err := os.MkdirAll(filepath.Dir(actionPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, actionPath); err != nil {
		t.Fatal(err)
	}
	temp := t.TempDir()
	output, path := filepath.Join(temp, "output"), filepath.Join(temp, "path")
	env := append(goEnv(t), "GITHUB_ACTIONS=true", "RUNNER_OS=Linux", "RUNNER_TEMP="+temp,
		"GITHUB_ACTION_PATH="+actionPath, "GITHUB_OUTPUT="+output, "GITHUB_PATH="+path,
		"REFRETRY_RELEASES_URL="+url)
	for k, v := range setup.Env {
		env = append(env, k+"="+inputExpr.ReplaceAllStringFunc(v, func(m string) string {
			return a.Inputs[inputExpr.FindStringSubmatch(m)[1]].Default
		}))
	}
	script := filepath.Join(temp, "setup.sh")
	if err := os.WriteFile(script, []byte(setup.Run), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", script)
	cmd.Dir, cmd.Env = work, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("setup step: %v\n%s", err, out)
	}
	dir := filepath.Join(temp, "refretry-action")
	b, _ := os.ReadFile(output)
	if !strings.Contains(string(b), "bin="+filepath.Join(dir, "refretry")+"\n") {
		t.Errorf("GITHUB_OUTPUT: %q", b)
	}
	if b, _ := os.ReadFile(path); string(b) != dir+"\n" {
		t.Errorf("GITHUB_PATH: %q", b)
	}
	if hits(rel.hostArchive()) != 1 {
		t.Errorf("the archive was fetched %d times:\n%s", hits(rel.hostArchive()), out)
	}
	checkInstalled(t, rel, filepath.Join(dir, "refretry"))
}
