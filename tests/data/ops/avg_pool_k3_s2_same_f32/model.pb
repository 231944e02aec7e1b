
C
xPlaceholder*
dtype0*$
shape:ÿÿÿÿÿÿÿÿÿ
j
yAvgPoolx*
T0*
data_formatNHWC*
ksize
*
paddingSAME*
strides
"Ú