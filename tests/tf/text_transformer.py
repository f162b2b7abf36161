"""keras-io's text classification with a Transformer (Keras 3), small: token
and position Embedding layers, MultiHeadAttention, Dropout, adam. The
Embeddings' gradients reach Adam as tf.IndexedSlices, which Adam treats
slice by slice (it squares each before adding them).

Under MATEX_ENABLE=1 Adam must get the slices one process gets: the token
embedding's rows of the whole batch (gathered from every rank, duplicates
kept), and the position embedding's one slice per position (summed over
ranks, since every rank looks up the same positions)."""
import numpy as np
import keras
from keras import layers, ops

vocab_size, maxlen = 200, 16
rng = np.random.default_rng(4)
x_train = rng.integers(1, vocab_size, size=(256, maxlen)).astype("int32")
y_train = (x_train[:, :4].mean(axis=1) > vocab_size / 2).astype("int32")
x_val, y_val = x_train[:64], y_train[:64]

class TransformerBlock(layers.Layer):
    def __init__(self, embed_dim, num_heads, ff_dim, rate=0.1):
        super().__init__()
        self.att = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.ffn = keras.Sequential([layers.Dense(ff_dim, activation="relu"), layers.Dense(embed_dim)])
        self.layernorm1 = layers.LayerNormalization(epsilon=1e-6)
        self.layernorm2 = layers.LayerNormalization(epsilon=1e-6)
        self.dropout1 = layers.Dropout(rate)
        self.dropout2 = layers.Dropout(rate)
    def call(self, inputs):
        attn_output = self.att(inputs, inputs)
        attn_output = self.dropout1(attn_output)
        out1 = self.layernorm1(inputs + attn_output)
        ffn_output = self.ffn(out1)
        ffn_output = self.dropout2(ffn_output)
        return self.layernorm2(out1 + ffn_output)

class TokenAndPositionEmbedding(layers.Layer):
    def __init__(self, maxlen, vocab_size, embed_dim):
        super().__init__()
        self.token_emb = layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
        self.pos_emb = layers.Embedding(input_dim=maxlen, output_dim=embed_dim)
    def call(self, x):
        maxlen = ops.shape(x)[-1]
        positions = ops.arange(start=0, stop=maxlen, step=1)
        positions = self.pos_emb(positions)
        x = self.token_emb(x)
        return x + positions

keras.utils.set_random_seed(3)
embed_dim, num_heads, ff_dim = 16, 2, 16
inputs = layers.Input(shape=(maxlen,))
x = TokenAndPositionEmbedding(maxlen, vocab_size, embed_dim)(inputs)
x = TransformerBlock(embed_dim, num_heads, ff_dim)(x)
x = layers.GlobalAveragePooling1D()(x)
x = layers.Dropout(0.1)(x)
x = layers.Dense(20, activation="relu")(x)
x = layers.Dropout(0.1)(x)
outputs = layers.Dense(2, activation="softmax")(x)
model = keras.Model(inputs=inputs, outputs=outputs)
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
history = model.fit(x_train, y_train, batch_size=32, epochs=2, validation_data=(x_val, y_val), verbose=2)
print("val_loss after each epoch:", history.history["val_loss"])
