package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestKubernetesExamples parses the manifests of examples/k8s: every
// document is YAML with a kind, every container's args are flags that
// "enrichd --help" lists (given the values they take), and the
// configuration of every ConfigMap passes --check-config.
func TestKubernetesExamples(t *testing.T) {
	var help, errb bytes.Buffer
	if code := run([]string{"--help"}, &help, &errb); code != 0 {
		t.Fatalf("--help: exit %d %s", code, errb.String())
	}
	known := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-\w, )?(--[a-z-]+)( \S+)?`).FindAllStringSubmatch(help.String(), -1) {
		known[m[1]] = m[2] != "" // takes a value
	}
	files, _ := filepath.Glob("../../examples/k8s/*.yaml")
	if len(files) < 2 {
		t.Fatalf("examples/k8s: %v", files)
	}
	kinds := map[string]int{}
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(f)
		for {
			var doc struct {
				Kind string            `yaml:"kind"`
				Data map[string]string `yaml:"data"`
				Spec struct {
					Template struct {
						Spec struct {
							Containers []struct {
								Name string   `yaml:"name"`
								Args []string `yaml:"args"`
							} `yaml:"containers"`
						} `yaml:"spec"`
					} `yaml:"template"`
				} `yaml:"spec"`
			}
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if doc.Kind == "" {
				t.Errorf("%s: a document without a kind", file)
			}
			kinds[doc.Kind]++
			for _, c := range doc.Spec.Template.Spec.Containers {
				for i := 0; i < len(c.Args); i++ {
					a := c.Args[i]
					name, _, inline := strings.Cut(a, "=")
					takes, ok := known[name]
					if !ok {
						t.Errorf("%s: container %s: %s is not a flag of enrichd --help", file, c.Name, a)
						continue
					}
					if takes && !inline {
						i++
					}
				}
			}
			if cfg, ok := doc.Data["enrichd.yaml"]; ok {
				path := filepath.Join(t.TempDir(), "enrichd.yaml")
				if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
					t.Fatal(err)
				}
				var out, errb bytes.Buffer
				if code := run([]string{"--config", path, "--check-config"}, &out, &errb); code != 0 {
					t.Errorf("%s: the ConfigMap's enrichd.yaml: --check-config exit %d:\n%s", file, code, errb.String())
				}
			}
		}
		f.Close()
	}
	if kinds["DaemonSet"] != 1 || kinds["Deployment"] != 1 || kinds["ConfigMap"] != 2 {
		t.Errorf("kinds: %v, want a DaemonSet, a Deployment and their ConfigMaps", kinds)
	}
}
