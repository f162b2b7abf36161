"""The Keras VAE example's shape: a Sampling layer that draws its noise with
tf.keras.backend.random_normal for the batch, a Model subclass whose own
train_step computes reconstruction and KL losses and keeps them in Mean
trackers, fit on NumPy images. Under MATEX_ENABLE=1 each rank must draw the
noise of its own rows of the global batch, and the trackers must give the
global values. matex.verify compares the plain run with N ranks."""
import numpy as np
import tensorflow as tf
import keras

latent = 2
rng = np.random.default_rng(21)
images = rng.uniform(size=(192, 8, 8, 1)).astype("float32")


class Sampling(keras.layers.Layer):
    def call(self, inputs):
        z_mean, z_log_var = inputs
        batch, dim = tf.shape(z_mean)[0], tf.shape(z_mean)[1]
        epsilon = tf.keras.backend.random_normal(shape=(batch, dim))
        return z_mean + tf.exp(0.5 * z_log_var) * epsilon


keras.utils.set_random_seed(4)
encoder_inputs = keras.Input(shape=(8, 8, 1))
h = keras.layers.Flatten()(encoder_inputs)
h = keras.layers.Dense(16, activation="relu")(h)
z_mean = keras.layers.Dense(latent)(h)
z_log_var = keras.layers.Dense(latent)(h)
encoder = keras.Model(encoder_inputs, [z_mean, z_log_var, Sampling()([z_mean, z_log_var])])
decoder_inputs = keras.Input(shape=(latent,))
d = keras.layers.Dense(64, activation="sigmoid")(decoder_inputs)
decoder = keras.Model(decoder_inputs, keras.layers.Reshape((8, 8, 1))(d))


class VAE(keras.Model):
    def __init__(self, encoder, decoder):
        super().__init__()
        self.encoder, self.decoder = encoder, decoder
        self.total_loss_tracker = keras.metrics.Mean(name="total_loss")
        self.reconstruction_loss_tracker = keras.metrics.Mean(name="reconstruction_loss")
        self.kl_loss_tracker = keras.metrics.Mean(name="kl_loss")

    @property
    def metrics(self):
        return [self.total_loss_tracker, self.reconstruction_loss_tracker, self.kl_loss_tracker]

    def train_step(self, data):
        with tf.GradientTape() as tape:
            z_mean, z_log_var, z = self.encoder(data)
            reconstruction = self.decoder(z)
            reconstruction_loss = tf.reduce_mean(tf.reduce_sum(
                keras.losses.binary_crossentropy(data, reconstruction), axis=(1, 2)))
            kl_loss = -0.5 * (1 + z_log_var - tf.square(z_mean) - tf.exp(z_log_var))
            kl_loss = tf.reduce_mean(tf.reduce_sum(kl_loss, axis=1))
            total_loss = reconstruction_loss + kl_loss
        grads = tape.gradient(total_loss, self.trainable_weights)
        self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
        self.total_loss_tracker.update_state(total_loss)
        self.reconstruction_loss_tracker.update_state(reconstruction_loss)
        self.kl_loss_tracker.update_state(kl_loss)
        return {m.name: m.result() for m in self.metrics}


vae = VAE(encoder, decoder)
vae.compile(optimizer=keras.optimizers.Adam(0.01))
history = vae.fit(images, epochs=3, batch_size=30, verbose=0)  # 7 batches, the last of 12 rows
print("kl_loss", history.history["kl_loss"][-1], "encoder output norm",
      float(tf.norm(encoder(images[:16])[0])))
