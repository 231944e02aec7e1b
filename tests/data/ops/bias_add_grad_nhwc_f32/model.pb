
:
gPlaceholder*
dtype0*
shape:
3
yBiasAddGradg*
T0*
data_formatNHWC"ª