
1
condPlaceholder*
dtype0
*
shape:
6
xPlaceholder*
dtype0*
shape:
6
yPlaceholder*
dtype0*
shape:
 
zSelectcondxy*
T0"Ú