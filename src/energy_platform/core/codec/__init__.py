"""Wire formats of devices: data format v4, OBIS codes and the encryption envelope."""
