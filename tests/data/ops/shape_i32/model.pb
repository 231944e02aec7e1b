
?
xPlaceholder*
dtype0* 
shape:ÿÿÿÿÿÿÿÿÿ
4
yShapex*
T0*
out_type0:íÏ"Ú