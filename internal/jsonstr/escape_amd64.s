#include "textflag.h"

// func needsEscapeLong(p *byte, n int) bool
//
// Whether any of the n >= 16 bytes from p needs escaping in a JSON string:
// a byte below 0x20 or from 0x80 (the bytes a signed compare finds below
// 0x20), '"' or '\\'. It reads 16 bytes at a time, the last 16 once more
// (overlapping), never outside the n bytes.
TEXT ·needsEscapeLong(SB), NOSPLIT, $0-17
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	LEAQ -16(SI)(CX*1), DI // the last block
	MOVQ $0x2222222222222222, AX
	MOVQ AX, X4
	PUNPCKLQDQ X4, X4
	MOVQ $0x5c5c5c5c5c5c5c5c, AX
	MOVQ AX, X5
	PUNPCKLQDQ X5, X5
	MOVQ $0x2020202020202020, AX
	MOVQ AX, X6
	PUNPCKLQDQ X6, X6
	PXOR X7, X7 // the bytes found so far
	CMPQ SI, DI
	JAE last

loop:
	MOVOU (SI), X0
	MOVO X0, X1
	PCMPEQB X4, X1
	MOVO X0, X2
	PCMPEQB X5, X2
	MOVO X6, X3
	PCMPGTB X0, X3 // 0x20 > byte, signed
	POR X1, X7
	POR X2, X7
	POR X3, X7
	ADDQ $16, SI
	CMPQ SI, DI
	JB loop

last:
	MOVOU (DI), X0
	MOVO X0, X1
	PCMPEQB X4, X1
	MOVO X0, X2
	PCMPEQB X5, X2
	MOVO X6, X3
	PCMPGTB X0, X3
	POR X1, X7
	POR X2, X7
	POR X3, X7
	PMOVMSKB X7, AX
	TESTL AX, AX
	SETNE ret+16(FP)
	RET
