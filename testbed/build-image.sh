#!/usr/bin/env bash
# Builds the testbed's node image locally: no container registry is reachable,
# so the root filesystem comes from debootstrap and is imported into podman.
#   testbed/build-image.sh [bookworm|trixie]    (default: bookworm, Debian 12)
# The image is localhost/stretch-kafka-node:<release>, rebuilt only when this
# script changes (its hash is in the tag it is built as).
#
# The nodes are reached as an operator reaches hosts: as the unprivileged
# user `deploy`, whose key testbed/up.yml mounts, with sudo; sshd refuses
# root's login.
set -euo pipefail
script=$(realpath "$0")
cd "$(dirname "$script")"

release=${1:-bookworm}
# Java and the exporters are baked in to save every container the same
# installs (Java's 200 MB; the exporters' took 2 minutes of every fresh
# converge); the roles still declare them (kafka_node per release in its
# vars, node_exporter in its defaults), as they must on a real host. Debian 12
# ships Java 17, Debian 13 Java 21. The exporters stay disabled until
# node_exporter has written their settings and enables them where they run.
case "$release" in
  bookworm) java=openjdk-17-jre-headless ;;
  trixie) java=openjdk-21-jre-headless ;;
  *) echo "build-image: release $release is not one the roles support (bookworm, trixie)" >&2; exit 2 ;;
esac

image=localhost/stretch-kafka-node
recipe=$release-$(sha256sum "$script" | cut -c1-12)
if podman image exists "$image:$recipe"; then
  podman tag "$image:$recipe" "$image:$release"
  exit 0
fi

include=sudo,openssh-server,systemd,systemd-sysv,dbus,python3,python3-apt,iproute2,procps,ca-certificates,$java
include=$include,prometheus-node-exporter,prometheus-blackbox-exporter
rootfs=$(mktemp -d /var/tmp/stretch-kafka-rootfs.XXXXXX)
trap 'rm -rf "$rootfs"' EXIT

echo "build-image: debootstrap $release into $rootfs"
debootstrap --variant=minbase --include="$include" "$release" "$rootfs" >/dev/null

# Units that make no sense in a container and slow its boot.
for unit in getty@tty1.service console-getty.service systemd-udevd.service \
            systemd-udev-trigger.service systemd-logind.service apt-daily.timer \
            apt-daily-upgrade.timer; do
  ln -sf /dev/null "$rootfs/etc/systemd/system/$unit"
done
rm -rf "$rootfs"/var/cache/apt/archives/*.deb
chroot "$rootfs" systemctl disable --quiet prometheus-node-exporter.service prometheus-blackbox-exporter.service

# The deploy user: a login with sudo and no password; root cannot log in.
chroot "$rootfs" useradd --create-home --shell /bin/bash --groups sudo deploy
chroot "$rootfs" install -d -m 0700 -o deploy -g deploy /home/deploy/.ssh
printf 'deploy ALL=(ALL:ALL) NOPASSWD: ALL\n' >"$rootfs/etc/sudoers.d/deploy"
chmod 0440 "$rootfs/etc/sudoers.d/deploy"
printf 'PermitRootLogin no\nPasswordAuthentication no\n' >"$rootfs/etc/ssh/sshd_config.d/10-testbed.conf"

tar -C "$rootfs" -c . | podman import \
  --change 'CMD ["/sbin/init"]' --change 'STOPSIGNAL SIGRTMIN+3' - "$image:$recipe" >/dev/null
podman tag "$image:$recipe" "$image:$release"
echo "build-image: built $image:$recipe"
