package tables

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRunSideLinksNoCompiler: the live set, and enrichd which serves it,
// link none of the compilers or their large dependencies.
func TestRunSideLinksNoCompiler(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	forbidden := []string{
		"github.com/lutkit/lutkit/compile",
		"github.com/lutkit/lutkit/tables/tablebuild",
		"github.com/apache/arrow-go/",
		"modernc.org/sqlite",
		"github.com/maxmind/mmdbwriter",
		"google.golang.org/grpc",
	}
	for _, pkg := range []string{"github.com/lutkit/lutkit/tables", "github.com/lutkit/lutkit/cmd/enrichd"} {
		out, err := exec.Command(goBin, "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range forbidden {
				if dep == f || strings.HasPrefix(dep, f+"/") || strings.HasPrefix(dep, f) && strings.HasSuffix(f, "/") {
					t.Errorf("%s links %s", pkg, dep)
				}
			}
		}
	}
}
