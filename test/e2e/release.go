package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// PreviousRelease is the file that names the release before this one: a tag, then the commit it
// tags (so a clone without tags still finds it). Tag each release (`git tag -a vX.Y.Z`) and put
// it here when the next one starts: the upgrade drill (test/chaos) upgrades a cluster of it to
// this tree's binaries.
const PreviousRelease = "test/e2e/previous-release"

// repoRoot is the top of the git work tree this package is in.
func repoRoot() (string, error) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse --show-toplevel: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// ResolvePrevious returns the previous release's name and commit (PreviousRelease): its tag when
// the repository has it, else the commit the file names. ok is false when the history holds
// neither (a shallow clone).
func ResolvePrevious() (name, commit string, ok bool, err error) {
	root, err := repoRoot()
	if err != nil {
		return "", "", false, err
	}
	b, err := os.ReadFile(filepath.Join(root, PreviousRelease))
	if err != nil {
		return "", "", false, err
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return "", "", false, fmt.Errorf("%s: want \"TAG COMMIT\", got %q", PreviousRelease, strings.TrimSpace(string(b)))
	}
	for _, ref := range f {
		out, err := exec.Command("git", "-C", root, "rev-parse", "--verify", "--quiet", ref+"^{commit}").Output()
		if err == nil {
			c := strings.TrimSpace(string(out))
			if ref == f[0] && !strings.HasPrefix(c, f[1]) && !strings.HasPrefix(f[1], c) {
				return "", "", false, fmt.Errorf("%s: tag %s is commit %s, the file says %s", PreviousRelease, f[0], c, f[1])
			}
			return f[0], c, true, nil
		}
	}
	return f[0], "", false, nil
}

// BuildRelease builds metad and metactl of the previous release (ResolvePrevious) into a
// directory kept across runs ($TMPDIR/metad-release-<commit>/) and returns it with the
// release's name. It skips tb when the repository's history does not hold the release.
func BuildRelease(tb testing.TB) (dir, name string) {
	tb.Helper()
	name, commit, ok, err := ResolvePrevious()
	if err != nil {
		tb.Fatal(err)
	}
	if !ok {
		tb.Skipf("the repository's history holds no %s (a shallow clone?): the upgrade drill needs it", name)
	}
	dir = filepath.Join(os.TempDir(), "metad-release-"+commit[:12])
	if haveBinaries(dir) {
		return dir, name
	}
	root, err := repoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	src, err := os.MkdirTemp("", "metad-release-src-")
	if err != nil {
		tb.Fatal(err)
	}
	defer os.RemoveAll(src)
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	untar := exec.Command("tar", "-x", "-C", src)
	var aerr, terr bytes.Buffer
	archive.Stderr, untar.Stderr = &aerr, &terr
	if untar.Stdin, err = archive.StdoutPipe(); err != nil {
		tb.Fatal(err)
	}
	if err := untar.Start(); err != nil {
		tb.Fatal(err)
	}
	if err := archive.Run(); err != nil {
		tb.Fatalf("git archive %s: %v\n%s", commit, err, aerr.String())
	}
	if err := untar.Wait(); err != nil {
		tb.Fatalf("tar: %v\n%s", err, terr.String())
	}
	tmp, err := os.MkdirTemp("", "metad-release-bin-")
	if err != nil {
		tb.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", tmp+string(filepath.Separator), "./cmd/metad", "./cmd/metactl")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		tb.Fatalf("go build of %s (%s): %v\n%s", name, commit, err, out)
	}
	if err := os.Rename(tmp, dir); err != nil && !haveBinaries(dir) { // another run may have built it meanwhile
		tb.Fatal(err)
	}
	return dir, name
}

func haveBinaries(dir string) bool {
	for _, b := range []string{"metad", "metactl"} {
		if st, err := os.Stat(filepath.Join(dir, b)); err != nil || !st.Mode().IsRegular() {
			return false
		}
	}
	return true
}
