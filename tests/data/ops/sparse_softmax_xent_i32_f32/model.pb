
@
logitsPlaceholder*
dtype0*
shape:ÿÿÿÿÿÿÿÿÿ
<
labelsPlaceholder*
dtype0*
shape:ÿÿÿÿÿÿÿÿÿ
S
xent#SparseSoftmaxCrossEntropyWithLogitslogitslabels*
Tlabels0*
T0"Ú