
?
xPlaceholder*
dtype0* 
shape:ÿÿÿÿÿÿÿÿÿ
%
ySizex*
T0*
out_type0"Ú