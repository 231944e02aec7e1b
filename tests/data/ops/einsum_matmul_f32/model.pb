
3
x0Placeholder*
dtype0*
shape
:
3
x1Placeholder*
dtype0*
shape
:
>
yEinsumx0x1*
N*
T0*
equation	ij,jk->ik"Ú