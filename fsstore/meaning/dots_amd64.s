#include "textflag.h"

// func dotsSSE2(q *widened, v *Vector, n int, out *int32)
//
// A vector is 100 signed bytes: twelve runs of 8, then 4. Each run is
// loaded into the low half of a register, each byte copied into both
// halves of a 16-bit lane (PUNPCKLBW) and shifted right with its sign
// (PSRAW), giving eight 16-bit numbers; PMADDWD multiplies them with the
// query's and adds pairs into four 32-bit sums. The query's 104 numbers
// stay in X0-X12 for the whole run.
TEXT ·dotsSSE2(SB), NOSPLIT, $0-32
	MOVQ q+0(FP), SI
	MOVQ v+8(FP), DI
	MOVQ n+16(FP), CX
	MOVQ out+24(FP), DX
	MOVOU 0(SI), X0
	MOVOU 16(SI), X1
	MOVOU 32(SI), X2
	MOVOU 48(SI), X3
	MOVOU 64(SI), X4
	MOVOU 80(SI), X5
	MOVOU 96(SI), X6
	MOVOU 112(SI), X7
	MOVOU 128(SI), X8
	MOVOU 144(SI), X9
	MOVOU 160(SI), X10
	MOVOU 176(SI), X11
	MOVOU 192(SI), X12

#define RUN(off, qreg) \
	MOVQ off(DI), X14 \
	PUNPCKLBW X14, X14 \
	PSRAW $8, X14 \
	PMADDWL qreg, X14 \
	PADDL X14, X13

loop:
	TESTQ CX, CX
	JZ done
	PXOR X13, X13
	RUN(0, X0)
	RUN(8, X1)
	RUN(16, X2)
	RUN(24, X3)
	RUN(32, X4)
	RUN(40, X5)
	RUN(48, X6)
	RUN(56, X7)
	RUN(64, X8)
	RUN(72, X9)
	RUN(80, X10)
	RUN(88, X11)
	// The last 4 bytes: a 32-bit load, the upper lanes zero.
	MOVL 96(DI), X14
	PUNPCKLBW X14, X14
	PSRAW $8, X14
	PMADDWL X12, X14
	PADDL X14, X13
	// The four sums into one.
	PSHUFD $0x4e, X13, X14
	PADDL X14, X13
	PSHUFD $0xb1, X13, X14
	PADDL X14, X13
	MOVL X13, AX
	MOVL AX, 0(DX)
	ADDQ $100, DI
	ADDQ $4, DX
	DECQ CX
	JMP loop

done:
	RET
