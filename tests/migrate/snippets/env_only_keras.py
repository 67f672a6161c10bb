import os
import keras
from keras import backend as K
os.environ['CUDA_VISIBLE_DEVICES'] = '0,1'
y = K.random_normal((2, 2))
