#define _GNU_SOURCE
#include "CShims.h"

#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

int CShims_netlink_watch_socket(void) {
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
    if (fd < 0) return -1;
    struct sockaddr_nl address;
    memset(&address, 0, sizeof(address));
    address.nl_family = AF_NETLINK;
    address.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE;
    if (bind(fd, (struct sockaddr *)&address, sizeof(address)) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int CShims_route_interface(int family, const void *address, int *interface_index) {
    struct {
        struct nlmsghdr header;
        struct rtmsg route;
        char attributes[64];
    } request;
    memset(&request, 0, sizeof(request));
    size_t address_length = family == AF_INET6 ? 16 : 4;
    request.header.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
    request.header.nlmsg_type = RTM_GETROUTE;
    request.header.nlmsg_flags = NLM_F_REQUEST;
    request.header.nlmsg_seq = 1;
    request.route.rtm_family = (unsigned char)family;
    request.route.rtm_dst_len = (unsigned char)(address_length * 8);
    struct rtattr *destination = (struct rtattr *)((char *)&request + NLMSG_ALIGN(request.header.nlmsg_len));
    destination->rta_type = RTA_DST;
    destination->rta_len = (unsigned short)RTA_LENGTH(address_length);
    memcpy(RTA_DATA(destination), address, address_length);
    request.header.nlmsg_len = NLMSG_ALIGN(request.header.nlmsg_len) + RTA_ALIGN(destination->rta_len);

    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0) return -errno;
    struct sockaddr_nl kernel;
    memset(&kernel, 0, sizeof(kernel));
    kernel.nl_family = AF_NETLINK;
    struct timeval timeout = {2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    if (sendto(fd, &request, request.header.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0) {
        int saved = errno;
        close(fd);
        return -saved;
    }
    char answer[8192];
    ssize_t length = recv(fd, answer, sizeof(answer), 0);
    int saved = errno;
    close(fd);
    if (length < 0) return -saved;
    for (struct nlmsghdr *message = (struct nlmsghdr *)answer; NLMSG_OK(message, (unsigned int)length);
         message = NLMSG_NEXT(message, length)) {
        if (message->nlmsg_type == NLMSG_ERROR) {
            struct nlmsgerr *error = NLMSG_DATA(message);
            return error->error < 0 ? error->error : -EIO;
        }
        if (message->nlmsg_type != RTM_NEWROUTE) continue;
        struct rtmsg *route = NLMSG_DATA(message);
        int attributes_length = (int)RTM_PAYLOAD(message);
        for (struct rtattr *attribute = RTM_RTA(route); RTA_OK(attribute, attributes_length);
             attribute = RTA_NEXT(attribute, attributes_length)) {
            if (attribute->rta_type == RTA_OIF && RTA_PAYLOAD(attribute) >= sizeof(int)) {
                memcpy(interface_index, RTA_DATA(attribute), sizeof(int));
                return 0;
            }
        }
        return -ENETUNREACH;
    }
    return -EIO;
}

int CShims_interface_is_up(int interface_index) {
    struct ifreq request;
    memset(&request, 0, sizeof(request));
    if (if_indextoname((unsigned int)interface_index, request.ifr_name) == NULL) return -errno;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    int result = ioctl(fd, SIOCGIFFLAGS, &request);
    int saved = errno;
    close(fd);
    if (result != 0) return -saved;
    short flags = request.ifr_flags;
    return (flags & IFF_UP) && (flags & IFF_RUNNING) ? 1 : 0;
}
