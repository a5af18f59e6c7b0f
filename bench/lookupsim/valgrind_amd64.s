#include "textflag.h"

// func clientRequest(args *[6]uint64) uint64
TEXT ·clientRequest(SB), NOSPLIT, $0-16
	MOVQ args+0(FP), AX
	MOVQ $0, DX
	// valgrind's marker: rolq $3,%rdi; rolq $13,%rdi; rolq $61,%rdi;
	// rolq $51,%rdi; then xchgq %rbx,%rbx, the request (RAX -> RDX).
	BYTE $0x48; BYTE $0xc1; BYTE $0xc7; BYTE $0x03
	BYTE $0x48; BYTE $0xc1; BYTE $0xc7; BYTE $0x0d
	BYTE $0x48; BYTE $0xc1; BYTE $0xc7; BYTE $0x3d
	BYTE $0x48; BYTE $0xc1; BYTE $0xc7; BYTE $0x33
	BYTE $0x48; BYTE $0x87; BYTE $0xdb
	MOVQ DX, ret+8(FP)
	RET
