package main

// The input and output types that live in packages of their own register
// themselves when imported.
import (
	_ "github.com/lutkit/lutkit/enrichd/kafka" // the kafka input and output
)
