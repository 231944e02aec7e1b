
;
x0Placeholder*
dtype0*
shape:
;
x1Placeholder*
dtype0*
shape:
D
yEinsumx0x1*
N*
T0*
equationBTNH,BSNH->BNTS"Ú