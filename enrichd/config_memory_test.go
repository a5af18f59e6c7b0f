package enrichd

import (
	"strings"
	"testing"
)

// TestConfigSizeBounds: a setting that sizes what the daemon allocates
// at start is refused at its file:line:column beyond its bound, where it
// used to pass --check-config and crash the start with the Go runtime's
// "out of memory".
func TestConfigSizeBounds(t *testing.T) {
	const io = "inputs: [{type: tcp, listen: \"127.0.0.1:0\"}]\noutputs: [{type: stdout}]\n"
	for _, c := range []struct{ yml, want string }{
		{io + "pipeline: {batch_bytes: 1000GiB}\n", "e.yaml:3:25: pipeline.batch_bytes: must be 0 (the default) to 1GiB, not 1000GiB"},
		{io + "pipeline: {batch_size: 2000000000}\n", "e.yaml:3:24: pipeline.batch_size: must be 0 (the default) to 1048576, not 2000000000"},
		{io + "pipeline: {batches: 2000000000}\n", "e.yaml:3:21: pipeline.batches: must be 0 (the default) to 1048576, not 2000000000"},
		{io + "pipeline: {workers: 100000000}\n", "e.yaml:3:21: pipeline.workers: must be 0 (GOMAXPROCS) to 1024, not 100000000"},
		{"inputs: [{type: tcp, listen: \"127.0.0.1:0\", max_message_size: 2GiB}]\noutputs: [{type: stdout}]\n", "e.yaml:1:63: inputs[0].max_message_size: must be 0 (the default) to 1GiB, not 2GiB"},
		{"inputs: [{type: tcp, listen: \"127.0.0.1:0\"}]\noutputs: [{type: stdout, buffer_size: 1025MiB}]\n", "e.yaml:2:39: outputs[0].buffer_size: must be 0 (the default) to 1GiB, not 1025MiB"},
	} {
		_, err := ParseConfig("e.yaml", []byte(c.yml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.yml, err, c.want)
		}
	}
	// At the bounds, accepted.
	if _, err := ParseConfig("e.yaml", []byte(io+"pipeline: {batch_bytes: 1GiB, batch_size: 1048576, workers: 1024}\n")); err != nil {
		t.Errorf("the bounds themselves are refused: %v", err)
	}
}

// TestCheckMemory: buffers within every bound that together are more
// than the machine's memory fail the start with an error that says what
// takes the memory; the defaults pass.
func TestCheckMemory(t *testing.T) {
	have, _ := machineMemory()
	if have <= 0 {
		t.Fatal("neither /proc/meminfo nor the cgroup gives the memory of this machine")
	}
	cfg, err := ParseConfig("e.yaml", []byte("inputs: [{type: tcp, listen: \"127.0.0.1:0\"}]\noutputs: [{type: stdout}]\npipeline: {batch_bytes: 1GiB, batches: 1048576}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.Preallocated(); p.Batches < 1<<50 || p.Total() <= have {
		t.Fatalf("preallocation %+v, want more than 1PiB of batches", p)
	}
	for _, err := range []error{CheckMemory(cfg), func() error { _, err := New(cfg, nil); return err }()} {
		if err == nil || !strings.Contains(err.Error(), "pipeline: the buffers would take 1PiB at start (input batches 1PiB, output buffers") ||
			!strings.Contains(err.Error(), "of memory here") {
			t.Errorf("error %v, want the buffers' size and the machine's memory", err)
		}
	}
	def, err := ParseConfig("e.yaml", []byte("inputs: [{type: tcp, listen: \"127.0.0.1:0\"}]\noutputs: [{type: stdout}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckMemory(def); err != nil {
		t.Errorf("the defaults: %v", err)
	}
	if got := def.Preallocated().Total(); got <= 0 || got > 256<<20 {
		t.Errorf("the defaults preallocate %s, want some and at most 256MiB", byteText(got))
	}
}

func TestByteText(t *testing.T) {
	for n, want := range map[int64]string{0: "0B", 1023: "1023B", 1024: "1KiB", 1536: "1536B", 12345: "12.1KiB", 1 << 30: "1GiB", 1025 << 20: "1025MiB", 1<<30 + 1: "1GiB", 1 << 50: "1PiB"} {
		if got := byteText(n); got != want {
			t.Errorf("byteText(%d) = %q, want %q", n, got, want)
		}
	}
}
