
6
xPlaceholder*
dtype0*
shape:
1
biasPlaceholder*
dtype0*
shape:
5
yBiasAddxbias*
T0*
data_formatNCHW"Ú