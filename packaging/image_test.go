package packaging_test

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/internal/testfiles"
)

// TestContainerImage builds the image of the Dockerfile with "make image"
// (podman): static binaries on an empty base. It checks the image's files
// (exported from a container created from it) and its entrypoint, then
// runs "enrichd --version" in it. Where the machine cannot run containers
// (a container without the rights to set a container's rlimits), the run
// is skipped and says why; building and checking the image still run.
func TestContainerImage(t *testing.T) {
	if _, err := exec.LookPath("podman"); err != nil {
		testfiles.Missing(t, "podman (the image test builds the Dockerfile; Debian package podman)")
	}
	root, err := testfiles.Root()
	if err != nil {
		t.Fatal(err)
	}
	commit := strings.TrimSpace(command(t, root, "git", "rev-parse", "--short", "HEAD"))
	arch := strings.TrimSpace(command(t, root, "go", "env", "GOARCH"))
	const image = "localhost/lutkit/enrichd:test"
	dist := t.TempDir()
	command(t, root, "make", "--no-print-directory", "image", "DIST="+dist, "DIST_PLATFORMS=linux/"+arch,
		"IMAGE="+image, "CONTAINER=podman")
	t.Cleanup(func() { _ = exec.Command("podman", "rmi", "-f", image).Run() })

	ep := command(t, root, "podman", "image", "inspect", "--format", "{{json .Config.Entrypoint}} {{json .Config.Cmd}} {{.Config.User}}", image)
	if strings.TrimSpace(ep) != `["/usr/bin/enrichd"] ["--config","/etc/enrichd/enrichd.yaml"] 65532:65532` {
		t.Errorf("entrypoint, cmd, user: %s", ep)
	}
	ctr := strings.TrimSpace(command(t, root, "podman", "create", image))
	t.Cleanup(func() { _ = exec.Command("podman", "rm", "-f", ctr).Run() })
	exported := filepath.Join(t.TempDir(), "image.tar")
	command(t, root, "podman", "export", "-o", exported, ctr)
	out, err := os.ReadFile(exported)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]int64{}
	tr := tar.NewReader(bytes.NewReader(out))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			files["/"+strings.TrimPrefix(h.Name, "/")] = h.Size
		}
	}
	for _, want := range []string{"/usr/bin/enrichd", "/usr/bin/lut", "/etc/ssl/certs/ca-certificates.crt", "/usr/share/doc/lutkit/LICENSE", "/usr/share/doc/lutkit/third_party_licenses.txt"} {
		if files[want] == 0 {
			t.Errorf("the image lacks %s", want)
		}
	}
	if len(files) != 5 {
		t.Errorf("the image holds %d files, want the 5 above (FROM scratch): %v", len(files), files)
	}
	// The binaries are static (CGO_ENABLED=0): they run without a libc.
	if mv := command(t, root, "go", "version", "-m", filepath.Join(dist, "enrichd-linux-"+arch)); !strings.Contains(mv, "CGO_ENABLED=0") {
		t.Errorf("enrichd is not built with CGO_ENABLED=0:\n%s", mv)
	}

	run, err := exec.Command("podman", "run", "--rm", image, "--version").CombinedOutput()
	if err != nil {
		if strings.Contains(string(run), "Operation not permitted") {
			t.Skipf("this machine cannot run containers (podman run: %s); the image was built and checked", bytes.TrimSpace(run))
		}
		t.Fatalf("podman run %s --version: %v\n%s", image, err, run)
	}
	if !strings.Contains(string(run), "enrichd ") || !strings.Contains(string(run), "commit "+commit) {
		t.Errorf("enrichd --version in the image: %s", run)
	}
}
