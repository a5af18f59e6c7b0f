#include "textflag.h"

// func needsEscapeLong(p *byte, n int) bool
//
// needsEscapeAVX2 when n >= 32 and the CPU has AVX2, else needsEscapeSSE2.
TEXT ·needsEscapeLong(SB), NOSPLIT, $0-17
	CMPQ n+8(FP), $32
	JB sse2
	CMPB ·hasAVX2(SB), $1
	JNE sse2
	JMP ·needsEscapeAVX2(SB)

sse2:
	JMP ·needsEscapeSSE2(SB)

// func needsEscapeSSE2(p *byte, n int) bool
//
// Whether any of the n >= 16 bytes from p needs escaping in a JSON string:
// a byte below 0x20 or from 0x80 (the bytes a signed compare finds below
// 0x20), '"' or '\\'. It reads 16 bytes at a time, the last 16 once more
// (overlapping), never outside the n bytes.
TEXT ·needsEscapeSSE2(SB), NOSPLIT, $0-17
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

// func needsEscapeAVX2(p *byte, n int) bool
//
// needsEscapeSSE2 32 bytes at a time, for n >= 32. Every vector
// instruction here is VEX-encoded (VMOVQ, not MOVQ): a legacy SSE one
// between 256-bit ones costs a save and restore of the upper halves on
// some Intel CPUs (TestAVX2OnlyVEX).
TEXT ·needsEscapeAVX2(SB), NOSPLIT, $0-17
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	LEAQ -32(SI)(CX*1), DI // the last block
	MOVQ $0x2222222222222222, AX
	VMOVQ AX, X4
	VPBROADCASTQ X4, Y4
	MOVQ $0x5c5c5c5c5c5c5c5c, AX
	VMOVQ AX, X5
	VPBROADCASTQ X5, Y5
	MOVQ $0x2020202020202020, AX
	VMOVQ AX, X6
	VPBROADCASTQ X6, Y6
	VPXOR Y7, Y7, Y7 // the bytes found so far
	CMPQ SI, DI
	JAE avxlast

avxloop:
	VMOVDQU (SI), Y0
	VPCMPEQB Y0, Y4, Y1
	VPCMPEQB Y0, Y5, Y2
	VPCMPGTB Y0, Y6, Y3 // 0x20 > byte, signed
	VPOR Y1, Y2, Y1
	VPOR Y1, Y3, Y3
	VPOR Y3, Y7, Y7
	ADDQ $32, SI
	CMPQ SI, DI
	JB avxloop

avxlast:
	VMOVDQU (DI), Y0
	VPCMPEQB Y0, Y4, Y1
	VPCMPEQB Y0, Y5, Y2
	VPCMPGTB Y0, Y6, Y3
	VPOR Y1, Y2, Y1
	VPOR Y1, Y3, Y3
	VPOR Y3, Y7, Y7
	VPTEST Y7, Y7
	SETNE ret+16(FP)
	VZEROUPPER
	RET
