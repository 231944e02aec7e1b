
.
xPlaceholder*
dtype0*
shape:	
&
uUniquex*
T0*
out_idx0	

yIdentityu*
T0

idxIdentityu:1*
T0	"ª