
C
xPlaceholder*
dtype0*$
shape:ÿÿÿÿÿÿÿÿÿ
k
yAvgPoolx*
T0*
data_formatNHWC*
ksize
*
paddingVALID*
strides
"Ú