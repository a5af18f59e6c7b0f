package main

// Callgrind client requests (valgrind/callgrind.h): no-ops when the
// program does not run under callgrind.
const (
	requestDump  = 0x43540000 // VG_USERREQ_TOOL_BASE('C','T')
	requestZero  = requestDump + 1
	requestStart = requestDump + 4
)

func request(req uint64) {
	args := [6]uint64{req}
	clientRequest(&args)
}

func dumpStats()            { request(requestDump) }
func zeroStats()            { request(requestZero) }
func startInstrumentation() { request(requestStart) }
