package main

// clientRequest issues a valgrind client request: args holds the request
// and its five arguments. It returns 0 when not under valgrind.
//
//go:noescape
func clientRequest(args *[6]uint64) uint64
